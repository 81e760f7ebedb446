//! trybuild cases for `#[retry]` and `#[derive(Classify)]` live in `tests/`; this library is empty.
