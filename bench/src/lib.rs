//! Benchmarks and simulations of `retry-runtime`.
//!
//! - `benches/`: criterion benchmarks against the peers; run them with `cargo bench -p retry-bench`.
//! - [`storm`]: a retry storm in virtual time; print its table with
//!   `cargo run --release -p retry-bench --example storm`.

pub mod storm;
