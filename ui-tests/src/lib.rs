//! trybuild cases for `#[retry]` live in `tests/`; this library is empty.
