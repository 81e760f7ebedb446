//! The README's recipes are the ones `async_openai.rs` and `reqwest_middleware.rs` run.

#[test]
fn the_readme_shows_the_compiled_recipe() {
    let readme = include_str!("../../README.md");
    let tested = include_str!("async_openai.rs");
    for line in [
        ".layer(retry_runtime::tower::RetryLayer::new(Retry::new(&Policy::AVAILABILITY).named(\"model\")))",
        ".service(async_openai::middleware::ReqwestService::new(reqwest::Client::new())),",
        "async_openai::Client::with_config(config).with_http_service(",
    ] {
        assert!(readme.contains(line), "README.md shows the recipe: {line}");
        // rustfmt breaks the lines and adds trailing commas: compare without either.
        let squeeze = |text: &str| -> String {
            text.chars()
                .filter(|c| !c.is_whitespace() && *c != ',')
                .collect()
        };
        let (squeezed, wanted) = (squeeze(tested), squeeze(line));
        assert!(
            squeezed.contains(&wanted),
            "async_openai.rs runs the recipe: {line}"
        );
    }
}
