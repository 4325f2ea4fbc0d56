-- Neovim (0.7+) saving a stale buffer over an agent's write (issue 24, item 9), driven
-- headless by tests/editors/test_neovim.py::test_a_stale_buffer_saved_over_the_agents_write:
--
--   the buffer gets an unsaved edit; $BATON_READY is written; the test has the agent write
--   the file and creates $BATON_GO; the buffer shows the agent's hunk as not in its text;
--   `:write!` saves the buffer over the agent's write; the hunk leaves the buffer's
--   diagnostics (the developer's now). A JSON report goes to $BATON_REPORT.

local python = assert(vim.env.BATON_PYTHON, 'BATON_PYTHON not set')
local root = assert(vim.env.BATON_ROOT, 'BATON_ROOT not set')
local report_path = assert(vim.env.BATON_REPORT, 'BATON_REPORT not set')
local ready = assert(vim.env.BATON_READY, 'BATON_READY not set')
local go = assert(vim.env.BATON_GO, 'BATON_GO not set')
local timeout = tonumber(vim.env.BATON_TIMEOUT_MS or '5000')

local report = { ok = false, steps = {}, messages = {} }

local function write_report()
  local f = assert(io.open(report_path, 'w'))
  f:write(vim.fn.json_encode(report))
  f:close()
end

local function wait_for(what, cond, ms)
  local result
  local ok = vim.wait(ms or timeout, function()
    result = cond()
    return result and true or false
  end, 20)
  if not ok then
    error('timed out waiting for ' .. what, 2)
  end
  return result
end

local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = 'baton',
  cmd = { python, '-m', 'baton', 'serve' },
  cmd_cwd = root,
  root_dir = root,
  workspace_folders = { { uri = vim.uri_from_fname(root), name = 'project' } },
  handlers = {
    ['window/showMessage'] = function(_, result)
      table.insert(report.messages, result.message)
    end,
    ['window/logMessage'] = function() end,
  },
})

local function baton_diagnostics()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == 'baton' then
      local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data or {}
      table.insert(out, { line = d.lnum, message = d.message, status = data.status })
    end
  end
  return out
end

local ok, err = pcall(function()
  vim.lsp.buf_attach_client(bufnr, client_id)
  wait_for('the server', function()
    local c = vim.lsp.get_client_by_id(client_id)
    return c and c.initialized
  end, 20000)
  -- The developer's own edit, not saved yet: line 10.
  vim.api.nvim_buf_set_lines(bufnr, 9, 10, false, { 'mine' })
  local f = assert(io.open(ready, 'w'))
  f:close()
  wait_for('the agent to write', function() return vim.loop.fs_stat(go) end, 30000)
  local seen = wait_for('the agent hunk in the buffer', function()
    local d = baton_diagnostics()
    return #d > 0 and d
  end)
  table.insert(report.steps, { name = 'before save', data = seen })
  vim.cmd('write!')
  wait_for('the hunk to leave the buffer', function() return #baton_diagnostics() == 0 end)
  table.insert(report.steps, { name = 'after save', data = baton_diagnostics() })
end)

report.ok = ok
report.error = err and tostring(err) or nil
write_report()
vim.lsp.stop_client(client_id)
vim.wait(2000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 20)
if ok then
  vim.cmd('qall!')
else
  vim.cmd('cquit 1')
end
