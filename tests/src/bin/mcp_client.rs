//! The MCP conformance suite's client under test: `mcp_client <server-url>`, with the
//! scenario in `MCP_CONFORMANCE_SCENARIO`. It initializes, lists the tools and calls the
//! first, its stream resumed by `retry_runtime` (see `retry_tests::mcp_client`), and exits 0
//! once it has the tool's result.

use std::process::ExitCode;

use retry_tests::mcp_client::McpClient;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp_client <server-url>: the MCP server to test against");
        return ExitCode::from(2);
    };
    let client = match McpClient::connect(&url).await {
        Ok(client) => client,
        Err(error) => {
            eprintln!("mcp_client: could not initialize a session with {url}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let tool = match client.first_tool().await {
        Ok(tool) => tool,
        Err(error) => {
            eprintln!("mcp_client: could not list the tools of {url}: {error}");
            return ExitCode::FAILURE;
        }
    };
    match client.call_tool(&tool, serde_json::json!({})).await {
        Ok(called) => {
            println!("{tool}: {}", called.result);
            ExitCode::SUCCESS
        }
        Err(gave_up) => {
            eprintln!("mcp_client: calling {tool} failed: {gave_up}");
            ExitCode::FAILURE
        }
    }
}
