// The ES module entry of @okfit/mcp: the CommonJS API (mcp.js), re-exported.
import okfit from './mcp.js';

export const { createMcpServer, open, validate, runCli, McpServer, Connection, OkfitError } = okfit;
export default okfit;
