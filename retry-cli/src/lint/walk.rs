//! Which files are checked, and as what: the walk ripgrep does, with the `ignore` crate.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

/// The file, besides `.gitignore`, whose patterns keep files out of the lint: fixture trees
/// full of loops that are wrong on purpose.
pub(crate) const IGNORE_FILE: &str = ".backoff-lint-ignore";

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    /// A `.rs` file, parsed with syn.
    Rust,
    /// A shell script: `.sh`, `.bash`, or a `#!` line naming sh or bash.
    Shell,
    /// A GitHub Actions workflow, whose `run:` bodies are shell.
    Workflow,
}

impl Language {
    /// The name the report and `--json` give it.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Shell => "shell",
            Language::Workflow => "workflow",
        }
    }
}

/// One entry of the walk: a file to check, or a path that could not be walked.
#[derive(Debug)]
pub(crate) enum Entry {
    /// A file and how to read it.
    File(PathBuf, Language),
    /// A path that could not be read, with the walker's reason.
    Unreadable(PathBuf, String),
}

/// Every file under `roots` worth checking, in a stable order (sorted by name), so two runs
/// print the same report.
pub(crate) fn files(roots: &[PathBuf]) -> Vec<Entry> {
    let mut entries = Vec::new();
    for root in roots {
        if let Err(error) = std::fs::metadata(root) {
            entries.push(Entry::Unreadable(root.clone(), error.to_string()));
            continue;
        }
        let walker = WalkBuilder::new(root)
            // `.github` is hidden, and holds the workflows.
            .hidden(false)
            // A fixture tree or an unpacked tarball has no `.git`, and its `.gitignore` still
            // says what is not source.
            .require_git(false)
            .add_custom_ignore_filename(IGNORE_FILE)
            .filter_entry(|entry| entry.file_name() != ".git")
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for result in walker {
            match result {
                Ok(entry) if entry.file_type().is_some_and(|kind| kind.is_file()) => {
                    let path = entry.into_path();
                    if let Some(language) = language_of(&path) {
                        entries.push(Entry::File(path, language));
                    }
                }
                Ok(_) => {}
                Err(error) => entries.push(Entry::Unreadable(root.clone(), error.to_string())),
            }
        }
    }
    entries
}

/// How `path` is read, or `None` when the lint has nothing to say about it.
pub(crate) fn language_of(path: &Path) -> Option<Language> {
    let extension = path.extension().and_then(|extension| extension.to_str());
    match extension {
        Some("rs") => Some(Language::Rust),
        Some("sh" | "bash") => Some(Language::Shell),
        Some("yml" | "yaml") if is_in_workflows(path) => Some(Language::Workflow),
        None if names_sh_or_bash(path).unwrap_or(false) => Some(Language::Shell),
        _ => None,
    }
}

/// Whether `path` is `.github/workflows/<file>`, where GitHub Actions reads workflows.
fn is_in_workflows(path: &Path) -> bool {
    let mut parents = path.parent().into_iter().flat_map(Path::file_name);
    let workflows = parents.next().is_some_and(|name| name == "workflows");
    let github = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .is_some_and(|name| name == ".github");
    workflows && github
}

/// Whether a file without an extension starts with a `#!` line whose interpreter is sh or
/// bash (`#!/bin/sh`, `#!/usr/bin/env bash`, `#!/bin/bash -eu`). Only its first line is read.
fn names_sh_or_bash(path: &Path) -> io::Result<bool> {
    let mut head = [0u8; 128];
    let mut file = File::open(path)?;
    let read = file.read(&mut head)?;
    let head = &head[..read];
    let Some(rest) = head.strip_prefix(b"#!") else {
        return Ok(false);
    };
    let line = rest.split(|&byte| byte == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let mut program = words.next().unwrap_or_default();
    if program.ends_with("/env") {
        program = words
            .find(|word| !word.starts_with('-'))
            .unwrap_or_default();
    }
    let name = program.rsplit('/').next().unwrap_or_default();
    Ok(matches!(name, "sh" | "bash"))
}
