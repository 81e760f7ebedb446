//! The pinned messages keep our internals out of the user's sight: no `.stderr` under
//! `tests/` names `__private` or a source file of this workspace, but where rustc points at a
//! public item's own signature (`retry_ui_tests::internal_named`).

#[test]
fn no_pinned_message_names_our_internals() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fail");
    let mut found = Vec::new();
    let mut pinned = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fail") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|ext| ext != "stderr") {
            continue;
        }
        pinned += 1;
        let text = std::fs::read_to_string(&path).expect("a pinned message");
        if let Some(internal) = retry_ui_tests::internal_named(&text) {
            found.push(format!("{} names `{internal}`", path.display()));
        }
    }
    assert!(
        pinned > 25,
        "only {pinned} pinned messages found in {}",
        dir.display()
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}
