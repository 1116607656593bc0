//! Who may take part in a run, and the TLS that carries it.
//!
//! - The coordinator generates a CA for the run; its key never leaves the
//!   coordinator's memory.
//! - A node dials the coordinator without knowing that CA. Both sides then
//!   prove knowledge of the cluster secret with an HMAC over the TLS
//!   session's exporter keying material (RFC 5705), so the proof is bound to
//!   that one session: it cannot be replayed on another, and a man in the
//!   middle (two sessions) cannot relay it. Only after both proofs does the
//!   coordinator sign the node's certificate request and hand out the
//!   scenario.
//! - Nodes talk to each other over mutual TLS verified against the run CA,
//!   and each side also checks that the peer's certificate is the one the
//!   coordinator issued for the node it claims to be.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};
use ring::hmac;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// ALPN of dcemu's protocol.
pub const ALPN: &[u8] = b"dcemu/1";

/// Label of the exporter keying material the membership proofs cover.
const EXPORTER_LABEL: &[u8] = b"EXPORTER-dcemu-membership";

/// Shortest cluster secret accepted.
pub const MIN_SECRET_LEN: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("certificate: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("TLS client verifier: {0}")]
    Verifier(String),
    #[error("QUIC crypto configuration: {0}")]
    Quic(String),
    #[error("cannot derive keying material from the TLS session")]
    Exporter,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The role a membership proof is made for (so one side's proof is never
/// valid as the other's).
#[derive(Clone, Copy, Debug)]
pub enum Role {
    Node,
    Coordinator,
}

fn proof_message(conn: &quinn::Connection, role: Role) -> Result<Vec<u8>, TlsError> {
    let mut ekm = [0u8; 32];
    conn.export_keying_material(&mut ekm, EXPORTER_LABEL, b"")
        .map_err(|_| TlsError::Exporter)?;
    let mut msg = match role {
        Role::Node => b"dcemu node\0".to_vec(),
        Role::Coordinator => b"dcemu coordinator\0".to_vec(),
    };
    msg.extend_from_slice(&ekm);
    Ok(msg)
}

/// HMAC-SHA256 of the secret over this session's keying material.
pub fn proof(secret: &[u8], conn: &quinn::Connection, role: Role) -> Result<Vec<u8>, TlsError> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    Ok(hmac::sign(&key, &proof_message(conn, role)?)
        .as_ref()
        .to_vec())
}

/// Checks a peer's proof (in constant time).
pub fn verify_proof(secret: &[u8], conn: &quinn::Connection, role: Role, tag: &[u8]) -> bool {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    match proof_message(conn, role) {
        Ok(msg) => hmac::verify(&key, &msg, tag).is_ok(),
        Err(_) => false,
    }
}

/// A fresh random secret, hex-encoded.
pub fn random_secret() -> Result<String, TlsError> {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| TlsError::Verifier("no system randomness".into()))?;
    Ok(hex::encode(bytes))
}

/// A fresh run id: [`super::wire::RUN_ID_BYTES`] random bytes, hex-encoded.
/// The coordinator makes one per start and every node link carries it.
pub fn random_run_id() -> Result<String, TlsError> {
    let mut bytes = [0u8; super::wire::RUN_ID_BYTES];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| TlsError::Verifier("no system randomness".into()))?;
    Ok(hex::encode(bytes))
}

/// The run's certificate authority (coordinator only).
pub struct RunCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

/// The DNS name a node's certificate is issued for.
pub fn node_dns_name(index: u32) -> String {
    format!("node{index}.dcemu")
}

impl RunCa {
    pub fn generate() -> Result<Self, TlsError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "dcemu run CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        Ok(RunCa { cert, key })
    }

    pub fn cert_der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }

    /// Signs a node's certificate request for the name `node<index>.dcemu`
    /// (whatever names the request itself asks for).
    pub fn sign_node(&self, csr_der: &[u8], index: u32) -> Result<Vec<u8>, TlsError> {
        let csr_der = rustls::pki_types::CertificateSigningRequestDer::from(csr_der);
        let mut csr = CertificateSigningRequestParams::from_der(&csr_der)?;
        csr.params.subject_alt_names = vec![SanType::DnsName(
            node_dns_name(index)
                .try_into()
                .map_err(|e: rcgen::Error| TlsError::Cert(e))?,
        )];
        csr.params.is_ca = IsCa::NoCa;
        csr.params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        csr.params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        Ok(csr.signed_by(&self.cert, &self.key)?.der().to_vec())
    }

    /// The coordinator's own certificate and key (for its control endpoint).
    pub fn coordinator_identity(&self) -> Result<Identity, TlsError> {
        let key = KeyPair::generate()?;
        let params = CertificateParams::new(vec!["coordinator.dcemu".to_string()])?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        Ok(Identity {
            cert: cert.der().to_vec(),
            key: key.serialize_der(),
        })
    }
}

/// A certificate and its PKCS#8 private key.
pub struct Identity {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

/// A node's key and the certificate request the coordinator will sign.
pub struct NodeKey {
    key: KeyPair,
    pub csr: Vec<u8>,
}

impl NodeKey {
    pub fn generate() -> Result<Self, TlsError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "dcemu node");
        let csr = params.serialize_request(&key)?.der().to_vec();
        Ok(NodeKey { key, csr })
    }

    pub fn identity(&self, cert: Vec<u8>) -> Identity {
        Identity {
            cert,
            key: self.key.serialize_der(),
        }
    }
}

/// QUIC's first estimate of a link's round trip, before it measures one.
const INITIAL_RTT: Duration = Duration::from_millis(10);

fn transport(failure_timeout: Duration) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    // A peer that stops answering is dropped within the failure bound.
    t.max_idle_timeout(quinn::IdleTimeout::try_from(failure_timeout).ok());
    t.keep_alive_interval(Some((failure_timeout / 4).max(Duration::from_millis(100))));
    // The first packet to a process that is not listening yet (a node
    // started beside its coordinator, a peer still reading its setup) is
    // lost; QUIC resends it after three initial RTTs, a second with the
    // Internet's default of 333 ms. Runs are on one host or one LAN.
    t.initial_rtt(INITIAL_RTT);
    // Windows of large batches should not stall on flow control.
    t.stream_receive_window(quinn::VarInt::from_u32(16 << 20));
    t.receive_window(quinn::VarInt::from_u32(64 << 20));
    t.send_window(64 << 20);
    Arc::new(t)
}

fn key_der(key: &[u8]) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.to_vec()))
}

fn quic_server(
    mut cfg: rustls::ServerConfig,
    failure_timeout: Duration,
) -> Result<quinn::ServerConfig, TlsError> {
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(cfg)
        .map_err(|e| TlsError::Quic(e.to_string()))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    server.transport_config(transport(failure_timeout));
    Ok(server)
}

fn quic_client(
    mut cfg: rustls::ClientConfig,
    failure_timeout: Duration,
) -> Result<quinn::ClientConfig, TlsError> {
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(cfg)
        .map_err(|e| TlsError::Quic(e.to_string()))?;
    let mut client = quinn::ClientConfig::new(Arc::new(crypto));
    client.transport_config(transport(failure_timeout));
    Ok(client)
}

/// The coordinator's control endpoint: server auth only; clients prove
/// membership with the secret inside the session.
pub fn coordinator_server(
    id: &Identity,
    failure_timeout: Duration,
) -> Result<quinn::ServerConfig, TlsError> {
    let cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(id.cert.clone())],
            key_der(&id.key),
        )?;
    quic_server(cfg, failure_timeout)
}

/// A node dialing the coordinator: any certificate is accepted at the TLS
/// level (its signature over the handshake is still checked); the
/// coordinator is authenticated by its membership proof over this session.
pub fn bootstrap_client(failure_timeout: Duration) -> Result<quinn::ClientConfig, TlsError> {
    let cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ProvenLater(provider())))
        .with_no_client_auth();
    quic_client(cfg, failure_timeout)
}

fn roots(ca: &[u8]) -> Result<Arc<RootCertStore>, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(ca.to_vec()))?;
    Ok(Arc::new(roots))
}

/// A node's peer endpoint: mutual TLS against the run CA.
pub fn peer_server(
    ca: &[u8],
    id: &Identity,
    failure_timeout: Duration,
) -> Result<quinn::ServerConfig, TlsError> {
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots(ca)?, provider())
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
    let cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from(id.cert.clone())],
            key_der(&id.key),
        )?;
    quic_server(cfg, failure_timeout)
}

/// A node dialing a peer: verifies it against the run CA, presents its own certificate.
pub fn peer_client(
    ca: &[u8],
    id: &Identity,
    failure_timeout: Duration,
) -> Result<quinn::ClientConfig, TlsError> {
    let cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots(ca)?)
        .with_client_auth_cert(
            vec![CertificateDer::from(id.cert.clone())],
            key_der(&id.key),
        )?;
    quic_client(cfg, failure_timeout)
}

/// The certificate a connection's peer presented (DER), if any.
pub fn peer_cert(conn: &quinn::Connection) -> Option<Vec<u8>> {
    let identity = conn.peer_identity()?;
    let certs = identity.downcast::<Vec<CertificateDer<'static>>>().ok()?;
    certs.first().map(|c| c.to_vec())
}

/// Accepts the coordinator's certificate whatever it is, but checks the
/// handshake signatures: the membership proof that follows authenticates
/// the session.
#[derive(Debug)]
struct ProvenLater(Arc<CryptoProvider>);

impl ServerCertVerifier for ProvenLater {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("TLS 1.2 is not used".into()))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
