# dcemu in a container: `dcemu coordinator` and `dcemu node` for
# docker-compose.yml (or `dcemu run` on its own).
#
# Stage 1 builds the release binary; stage 2 is a slim runtime with only it.
FROM rust:1-slim-bookworm AS builder
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p dcemu-emulator --bin dcemu

FROM debian:bookworm-slim
COPY --from=builder /src/target/release/dcemu /usr/local/bin/dcemu
# scenarios are mounted at /scenarios, results at /results
WORKDIR /results
ENTRYPOINT ["dcemu"]
CMD ["--help"]
