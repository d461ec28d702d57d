import okfit from './index.js';

export const { createMcpServer, open, validate, McpServer, Connection, OkfitError } = okfit;
export default okfit;
