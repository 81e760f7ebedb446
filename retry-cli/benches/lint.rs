//! How fast `backoff lint` reads a tree: 2,000 Rust files and 200 workflows, generated.
//!
//! The built binary is run on the tree, as CI runs it, so the walk, the reading and the
//! report are measured with the parsing. Criterion's throughput is files per second. Run
//! with `cargo bench -p retry-cli --bench lint`.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const RUST_FILES: usize = 2_000;
const WORKFLOWS: usize = 200;

/// A Rust file of about 120 lines: functions, a ticker, and every tenth file a retry loop.
fn rust_file(index: usize) -> String {
    let mut text = String::from("use std::time::Duration;\nuse tokio::time::{self, sleep};\n\n");
    for function in 0..10 {
        let _ = write!(
            text,
            "/// Function {function} of file {index}.\n\
             pub async fn work_{function}(input: &[u8]) -> Result<usize, std::io::Error> {{\n\
             \x20   let mut total = 0;\n\
             \x20   for byte in input {{\n\
             \x20       total += usize::from(*byte) * {function};\n\
             \x20   }}\n\
             \x20   Ok(total)\n\
             }}\n\n"
        );
    }
    text.push_str(
        "pub async fn tick(mut interval: time::Interval) {\n    loop {\n        \
         interval.tick().await;\n        flush().await;\n    }\n}\n",
    );
    if index.is_multiple_of(10) {
        text.push_str(
            "pub async fn fetch() -> String {\n    loop {\n        if let Ok(body) = call().await \
             {\n            break body;\n        }\n        sleep(Duration::from_secs(1)).await;\n    \
             }\n}\n",
        );
    }
    text
}

/// A workflow with four steps, one of them seed 004's loop.
fn workflow(index: usize) -> String {
    format!(
        "name: workflow {index}\non: [push]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    \
         steps:\n      - uses: actions/checkout@v4\n      - run: cargo build --release\n      \
         - run: |\n          for attempt in 1 2 3 4; do\n            git push && break\n            \
         sleep $((attempt * 5))\n          done\n      - run: |\n          echo \"${{{{ github.sha }}}}\"\n          \
         cargo test\n"
    )
}

fn write_tree(root: &Path) {
    let rust = root.join("src");
    let workflows = root.join(".github/workflows");
    std::fs::create_dir_all(&rust).expect("create src");
    std::fs::create_dir_all(&workflows).expect("create workflows");
    for index in 0..RUST_FILES {
        std::fs::write(rust.join(format!("file_{index}.rs")), rust_file(index)).expect("write");
    }
    for index in 0..WORKFLOWS {
        std::fs::write(workflows.join(format!("w_{index}.yml")), workflow(index)).expect("write");
    }
}

fn lint_tree(c: &mut Criterion) {
    let tree = tempfile::tempdir().expect("a temporary directory");
    write_tree(tree.path());
    let mut group = c.benchmark_group("lint");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements((RUST_FILES + WORKFLOWS) as u64));
    group.bench_function("2000 rust files and 200 workflows", |b| {
        b.iter(|| {
            let output = Command::new(env!("CARGO_BIN_EXE_backoff"))
                .args(["lint", "--json"])
                .arg(tree.path())
                .output()
                .expect("backoff runs");
            // 200 rust loops and 200 workflow loops: status 1, findings.
            assert_eq!(output.status.code(), Some(1));
            black_box(output.stdout.len())
        });
    });
    group.finish();
}

criterion_group!(benches, lint_tree);
criterion_main!(benches);
