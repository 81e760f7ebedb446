//! Benchmarks and simulations of `retry-runtime`.
//!
//! - `benches/compare.rs`: issue 12's table against the peers, in one run; `cargo bench -p retry-bench`.
//! - [`storm`]: a retry storm in virtual time; print its table with
//!   `cargo run --release -p retry-bench --example storm`.

//! - [`pacing`]: 120 callers at twice a key's limit, alone, sharing its pause, and paced; its
//!   picture with `cargo run --release -p retry-bench --example storm -- --pacing-svg PATH`.

pub mod pacing;
pub mod storm;
