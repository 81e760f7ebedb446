//! Shared helpers for the integration tests: a loopback server and classified errors.
