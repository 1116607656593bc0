//! A stream's frames (QUIC, or a same-host socket) as a [`Stream`], so a
//! link actor can take them with actix's `StreamHandler` one at a time, in
//! the order they came.

use futures_util::Stream;
use serde::de::DeserializeOwned;

use super::wire::{self, WireError};

/// The frames of `recv`, each at most `max` bytes, or at most what
/// `limit_after` returns for the frames after one (an admitted node's
/// results may outgrow the per-window limit). The stream ends at the end of
/// `recv`, and right after its first error.
pub fn frames<T, R>(
    recv: R,
    max: usize,
    limit_after: fn(&T, usize) -> usize,
) -> impl Stream<Item = Result<T, WireError>>
where
    T: DeserializeOwned + 'static,
    R: tokio::io::AsyncRead + Unpin + 'static,
{
    futures_util::stream::unfold(Some((recv, max)), move |state| async move {
        let (mut recv, max) = state?;
        match wire::read::<T, _>(&mut recv, max).await {
            Ok(Some(frame)) => {
                let next = limit_after(&frame, max);
                Some((Ok(frame), Some((recv, next))))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// For [`frames`]: the limit never changes.
pub fn same_limit<T>(_: &T, max: usize) -> usize {
    max
}
