//! The demo (filled in below).

fn main() {}
