// A real MCP server for retry-tests, built on the official TypeScript SDK: Streamable HTTP in
// stateful mode (one transport per session, keyed by `mcp-session-id`), with an event store,
// so the SSE events it sends carry an `id` and a GET with `Last-Event-ID` replays the events
// after that id (SEP-1699).
//
//   node tests/mcp/sdk-server.mjs [--exit-on-stdin-close]
//
// It listens on 127.0.0.1, on a free port, and prints exactly one line on stdout once
// listening: `listening <port>`. Everything else goes to stderr.
//
// - `POST|GET|DELETE /mcp`: the SDK's transport.
// - `GET /runs`: `{"runs": N}`, how many times the `count` tool has run, across all sessions.
//
// The one tool, `count` `{ to = 10, delay_ms = 20 }`, sends `to` progress notifications
// (progress 1..to, total `to`, for the request's `_meta.progressToken`) on the tools/call's
// own SSE stream, each after a wait of `delay_ms`, then answers `counted to <to>`.
//
// With `--exit-on-stdin-close` the server exits when its stdin reaches its end, so a test
// that spawns it with a piped stdin never leaves it running when the test process dies.

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * An in-memory `EventStore` with the semantics of the SDK's example `InMemoryEventStore`
 * (`examples/shared/inMemoryEventStore.js`), but ordered by arrival: the example names its
 * events `<stream>_<Date.now()>_<random>` and replays them sorted by name, so two events
 * stored in the same millisecond (a tool's last progress and its result) can replay out of
 * order. Here an event's id is `<stream id>_<sequence number>`, and replay follows the order
 * the events were stored in.
 *
 * Like the example, it has no `getStreamIdForEventId`, so the transport does no conflict
 * check on resume, and an unknown `Last-Event-ID` replays nothing and names stream `''`.
 */
class OrderedEventStore {
  constructor() {
    /** @type {{ eventId: string, streamId: string, message: object }[]} */
    this.events = [];
    this.next = 1;
  }

  async storeEvent(streamId, message) {
    const eventId = `${streamId}_${this.next}`;
    this.next += 1;
    this.events.push({ eventId, streamId, message });
    return eventId;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const index = this.events.findIndex((event) => event.eventId === lastEventId);
    if (index < 0) {
      return '';
    }
    const { streamId } = this.events[index];
    for (const event of this.events.slice(index + 1)) {
      if (event.streamId === streamId) {
        await send(event.eventId, event.message);
      }
    }
    return streamId;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let runs = 0;

function mcpServer() {
  const server = new McpServer({ name: 'retry-tests-sdk-server', version: '0.0.0' });
  server.registerTool(
    'count',
    {
      description: 'Count to `to`, one progress notification every `delay_ms`, then answer.',
      inputSchema: {
        to: z.number().int().min(0).default(10),
        delay_ms: z.number().int().min(0).default(20),
      },
    },
    async ({ to, delay_ms }, extra) => {
      runs += 1;
      const progressToken = extra._meta?.progressToken;
      for (let progress = 1; progress <= to; progress += 1) {
        await sleep(delay_ms);
        if (progressToken !== undefined) {
          // The handler's own `sendNotification` passes the request's id as
          // `relatedRequestId`, so the notification goes on the tools/call's SSE stream.
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: to },
          });
        }
      }
      return { content: [{ type: 'text', text: `counted to ${to}` }] };
    },
  );
  return server;
}

/** @type {Map<string, StreamableHTTPServerTransport>} */
const transports = new Map();

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function rpcError(res, status, code, message) {
  json(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) {
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function handleMcp(req, res) {
  const sessionId = req.headers['mcp-session-id'];
  let body;
  if (req.method === 'POST') {
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      rpcError(res, 400, -32700, 'Parse error: Invalid JSON');
      return;
    }
  }
  let transport = sessionId === undefined ? undefined : transports.get(sessionId);
  if (transport === undefined) {
    if (sessionId !== undefined) {
      rpcError(res, 404, -32001, 'Session not found');
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      rpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
      return;
    }
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: false,
      eventStore: new OrderedEventStore(),
      onsessioninitialized: (id) => {
        transports.set(id, created);
      },
    });
    created.onclose = () => {
      if (created.sessionId !== undefined) {
        transports.delete(created.sessionId);
      }
    };
    await mcpServer().connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, body);
}

const http = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
  let handled;
  if (path === '/runs' && req.method === 'GET') {
    handled = Promise.resolve(json(res, 200, { runs }));
  } else if (path === '/mcp') {
    handled = handleMcp(req, res);
  } else {
    handled = Promise.resolve(json(res, 404, { error: `no route for ${req.method} ${path}` }));
  }
  handled.catch((error) => {
    console.error('sdk-server: error handling a request:', error);
    if (!res.headersSent) {
      rpcError(res, 500, -32603, 'Internal server error');
    } else {
      res.destroy();
    }
  });
});

http.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${http.address().port}\n`);
});

if (process.argv.includes('--exit-on-stdin-close')) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
