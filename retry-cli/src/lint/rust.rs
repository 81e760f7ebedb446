//! Rust: a `loop`, `while` or `for` that waits and decides on an attempt's outcome.
//!
//! Waiting is a call to `tokio::time::sleep` or `sleep_until`, `std::thread::sleep`,
//! async-std's `task::sleep`, smol's (async-io's) `Timer::after` or `Timer::at`, futures-timer's
//! `Delay::new`, or a `.tick()` (tokio's `Interval`). A call counts under any name the file
//! gives it: a `use` alias (`use tokio::time::sleep as pause;`), a glob (`use
//! tokio::time::*;`) or a partial path (`time::sleep`). Deciding is a `break`, `continue` or
//! `return` in the loop, an `Ok(..)`/`Err(..)` pattern, or an `is_ok()`/`is_err()` call: a
//! loop with none of them waits every round whatever happens (a ticker), and is not a retry.
//!
//! Code under `#[cfg(test)]` is checked like any other: syn sees every item, whatever its cfg.
//! Loops written inside a macro's input (`tokio::select!`, `join!`, `quote!`) are invisible:
//! until the macro is expanded its input is a token stream, not Rust syntax, and the lint
//! does not expand macros.

use std::collections::HashMap;

use proc_macro2::{LineColumn, Span};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use super::{FileReport, Finding, Rule, Skipped, shorten};

/// The path endings that wait, checked against a call's path once its `use` names are resolved.
const WAITS: &[&[&str]] = &[
    &["time", "sleep"],
    &["time", "sleep_until"],
    &["thread", "sleep"],
    &["task", "sleep"],
    &["Timer", "after"],
    &["Timer", "at"],
    &["Delay", "new"],
];

/// Check one Rust file's text.
pub(crate) fn check(text: &str) -> FileReport {
    // Spans from earlier files are dead by now; their source map would grow with every file.
    proc_macro2::extra::invalidate_current_thread_spans();
    let file = match syn::parse_file(text) {
        Ok(file) => file,
        Err(error) => return unparsable(&error),
    };
    let mut imports = Imports::default();
    imports.visit_file(&file);
    let mut loops = Loops {
        imports: &imports,
        text,
        findings: Vec::new(),
    };
    loops.visit_file(&file);
    FileReport {
        findings: loops.findings,
        skipped: Vec::new(),
    }
}

/// The report for a file syn cannot parse, at the place it stopped.
fn unparsable(error: &syn::Error) -> FileReport {
    let start = error.span().start();
    FileReport {
        findings: Vec::new(),
        skipped: vec![Skipped {
            line: start.line,
            column: start.column + 1,
            reason: format!(
                "cannot parse as Rust: {error}; it was skipped: fix its syntax, or list it in \
                 .backoff-lint-ignore"
            ),
        }],
    }
}

/// The names the file's `use` items bring in, wherever they are (a `use` inside a function or
/// a test module counts for the whole file: over-resolving can only find more).
#[derive(Default)]
struct Imports {
    /// A local name and the path it stands for.
    aliases: HashMap<String, Vec<String>>,
    /// The paths whose every name is imported (`use tokio::time::*`).
    globs: Vec<Vec<String>>,
}

impl Imports {
    /// Record one `use` tree under `prefix`.
    fn add(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.add(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let name = name.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last() {
                        self.aliases.insert(last.clone(), prefix.clone());
                    }
                } else {
                    let mut full = prefix.clone();
                    full.push(name.clone());
                    self.aliases.insert(name, full);
                }
            }
            syn::UseTree::Rename(rename) => {
                let mut full = prefix.clone();
                if rename.ident != "self" {
                    full.push(rename.ident.to_string());
                }
                self.aliases.insert(rename.rename.to_string(), full);
            }
            syn::UseTree::Glob(_) => self.globs.push(prefix.clone()),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.add(prefix, tree);
                }
            }
        }
    }

    /// Whether a call to `path` waits, under the names this file imports.
    fn waits(&self, path: &syn::Path) -> bool {
        let segments: Vec<String> = path
            .segments
            .iter()
            .map(|segment| segment.ident.to_string())
            .collect();
        let Some(first) = segments.first() else {
            return false;
        };
        let resolved = match self.aliases.get(first) {
            Some(full) => full.iter().chain(&segments[1..]).cloned().collect(),
            None => segments.clone(),
        };
        if is_wait(&resolved) {
            return true;
        }
        // A bare name may come from a glob: `use tokio::time::*; sleep(d)`.
        self.globs.iter().any(|glob| {
            let mut full = glob.clone();
            full.extend(segments.iter().cloned());
            is_wait(&full)
        })
    }
}

impl<'ast> Visit<'ast> for Imports {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.add(&mut Vec::new(), &item.tree);
    }
}

/// Whether a fully resolved path ends like one of [`WAITS`].
fn is_wait(path: &[String]) -> bool {
    WAITS.iter().any(|wait| {
        path.len() >= wait.len()
            && path[path.len() - wait.len()..]
                .iter()
                .zip(wait.iter())
                .all(|(segment, expected)| segment == expected)
    })
}

/// The visitor that finds each loop and judges it.
struct Loops<'a> {
    imports: &'a Imports,
    text: &'a str,
    findings: Vec<Finding>,
}

impl Loops<'_> {
    /// Judge one loop: report its waits if it decides on an outcome. Its body is then visited
    /// again for the loops nested in it, which are judged on their own.
    fn judge(&mut self, keyword: Span, condition: Option<&syn::Expr>, body: &syn::Block) {
        let mut waits = Waits {
            imports: self.imports,
            found: Vec::new(),
        };
        waits.visit_block(body);
        if waits.found.is_empty() {
            return;
        }
        let mut decides = Decides::default();
        decides.visit_block(body);
        if let Some(condition) = condition {
            decides.visit_expr(condition);
        }
        if !decides.found {
            return;
        }
        let loop_line = keyword.start().line;
        for span in waits.found {
            let start = span.start();
            self.findings.push(Finding {
                line: start.line,
                column: start.column + 1,
                loop_line,
                wait: quote_source(self.text, start, span.end()),
                rule: Rule::OwnWait,
            });
        }
    }
}

impl<'ast> Visit<'ast> for Loops<'_> {
    fn visit_expr_loop(&mut self, node: &'ast syn::ExprLoop) {
        let keyword = node
            .label
            .as_ref()
            .map_or(node.loop_token.span, |label| label.name.apostrophe);
        self.judge(keyword, None, &node.body);
        visit::visit_expr_loop(self, node);
    }

    fn visit_expr_while(&mut self, node: &'ast syn::ExprWhile) {
        let keyword = node
            .label
            .as_ref()
            .map_or(node.while_token.span, |label| label.name.apostrophe);
        self.judge(keyword, Some(&node.cond), &node.body);
        visit::visit_expr_while(self, node);
    }

    fn visit_expr_for_loop(&mut self, node: &'ast syn::ExprForLoop) {
        let keyword = node
            .label
            .as_ref()
            .map_or(node.for_token.span, |label| label.name.apostrophe);
        self.judge(keyword, None, &node.body);
        visit::visit_expr_for_loop(self, node);
    }
}

/// The waits in one loop's body, not counting those of loops nested in it (judged apart), of
/// closures and async blocks (which run when called or spawned, not as the loop's round) or
/// of functions defined in it.
struct Waits<'a> {
    imports: &'a Imports,
    found: Vec<Span>,
}

impl<'ast> Visit<'ast> for Waits<'_> {
    fn visit_expr_call(&mut self, node: &'ast syn::ExprCall) {
        if let syn::Expr::Path(path) = &*node.func
            && self.imports.waits(&path.path)
        {
            self.found.push(node.span());
        }
        visit::visit_expr_call(self, node);
    }

    fn visit_expr_method_call(&mut self, node: &'ast syn::ExprMethodCall) {
        if node.method == "tick" && node.args.is_empty() {
            self.found.push(node.span());
        }
        visit::visit_expr_method_call(self, node);
    }

    fn visit_expr_loop(&mut self, _: &'ast syn::ExprLoop) {}
    fn visit_expr_while(&mut self, _: &'ast syn::ExprWhile) {}
    fn visit_expr_for_loop(&mut self, _: &'ast syn::ExprForLoop) {}
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// Whether a loop leaves or repeats on an outcome: `break`, `continue`, `return`, an `Ok`/`Err`
/// pattern, or `is_ok()`/`is_err()`. Not looked for in nested loops (their `break` leaves
/// them), closures or async blocks (their `return` leaves them), or nested functions.
#[derive(Default)]
struct Decides {
    found: bool,
}

impl<'ast> Visit<'ast> for Decides {
    fn visit_expr_break(&mut self, _: &'ast syn::ExprBreak) {
        self.found = true;
    }

    fn visit_expr_continue(&mut self, _: &'ast syn::ExprContinue) {
        self.found = true;
    }

    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.found = true;
    }

    fn visit_pat_tuple_struct(&mut self, node: &'ast syn::PatTupleStruct) {
        if node
            .path
            .segments
            .last()
            .is_some_and(|last| last.ident == "Ok" || last.ident == "Err")
        {
            self.found = true;
        }
        visit::visit_pat_tuple_struct(self, node);
    }

    fn visit_expr_method_call(&mut self, node: &'ast syn::ExprMethodCall) {
        if node.method == "is_ok" || node.method == "is_err" {
            self.found = true;
        }
        visit::visit_expr_method_call(self, node);
    }

    fn visit_expr_loop(&mut self, _: &'ast syn::ExprLoop) {}
    fn visit_expr_while(&mut self, _: &'ast syn::ExprWhile) {}
    fn visit_expr_for_loop(&mut self, _: &'ast syn::ExprForLoop) {}
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// The source between two positions, on one line, cut by [`shorten`]: the waiting words
/// as written (`tokio::time::sleep(d)`), never the line around them.
fn quote_source(text: &str, start: LineColumn, end: LineColumn) -> String {
    let mut quoted = String::new();
    for (index, line) in text.lines().enumerate().skip(start.line - 1) {
        let number = index + 1;
        if number > end.line {
            break;
        }
        let from = if number == start.line {
            start.column
        } else {
            0
        };
        let to = if number == end.line {
            end.column
        } else {
            usize::MAX
        };
        let piece: String = line
            .chars()
            .skip(from)
            .take(to.saturating_sub(from))
            .collect();
        if !quoted.is_empty() {
            quoted.push(' ');
        }
        quoted.push_str(piece.trim());
    }
    shorten(&quoted)
}
