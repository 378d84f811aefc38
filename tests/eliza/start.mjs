// A real ElizaOS 1.x server (@elizaos/server) with one character, for the `eliza` agent
// kind's tests (tests/functional/eliza.rs). The test copies this file into the folder
// where .ci/run installed package.json's packages (AGENTEST_ELIZA_DIR), so that its
// imports resolve there, and runs it with node.
//
// Environment: SERVER_HOST and SERVER_PORT, AGENT_NAME, PGLITE_DATA_DIR, and
// plugin-openai's OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_SMALL_MODEL /
// OPENAI_LARGE_MODEL; ELIZA_SERVER_AUTH_TOKEN makes the server require X-API-KEY.
// The server logs on stdout; once it answers, this prints `listening on PORT`.
import { AgentServer } from '@elizaos/server';
import sqlPlugin from '@elizaos/plugin-sql';
import bootstrapPlugin from '@elizaos/plugin-bootstrap';
import openaiPlugin from '@elizaos/plugin-openai';

const name = process.env.AGENT_NAME || 'Ada';
const wanted = Number(process.env.SERVER_PORT);
const server = new AgentServer();
await server.start({
  port: wanted,
  dataDir: process.env.PGLITE_DATA_DIR,
  agents: [
    {
      character: {
        name,
        bio: [`${name} is a concise, helpful assistant.`],
        system: `You are ${name}, a concise helpful assistant.`,
        settings: {},
        plugins: [],
      },
      // Objects, not names: a name goes through core's plugin loader, which installs.
      plugins: [sqlPlugin, bootstrapPlugin, openaiPlugin],
    },
  ],
});
const { port } = server.server.address();
// A busy port makes the server move to the next one on its own: say so and stop.
if (port !== wanted) {
  process.stdout.write(`wrong port: asked for ${wanted}, listening on ${port}\n`);
  process.exit(1);
}
// The server cuts a connection idle for 30 s (hard-coded), which would end a slow
// model's `transport: "http"` reply with no answer.
server.server.timeout = 0;
process.stdout.write(`listening on ${port}\n`);
