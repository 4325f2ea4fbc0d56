-- Neovim (0.7+) taking back an undo it already saved, driven headless by
-- tests/editors/test_neovim.py::test_u_of_a_saved_undo_then_write_lands_the_hunk_again:
--
--   the agent's landed hunk shows; `baton.undo` with a comment (the server puts the old line
--   in the buffer through workspace/applyEdit); `:write`; `u` (the agent's line back in the
--   buffer); `:write` again; the hunk shows landed again. Then the same for a redo:
--   `baton.undo` with $BATON_UNDO_COMMENT, `:write`; `baton.keep` (its redo: the agent's
--   line back in the buffer) with $BATON_REDO_COMMENT, `:write`, the hunk shown kept; `u`
--   (the old line back in the buffer); `:write`; no hunk shown (undone again). A JSON
--   report goes to $BATON_REPORT.

local python = assert(vim.env.BATON_PYTHON, 'BATON_PYTHON not set')
local root = assert(vim.env.BATON_ROOT, 'BATON_ROOT not set')
local report_path = assert(vim.env.BATON_REPORT, 'BATON_REPORT not set')
local comment = assert(vim.env.BATON_COMMENT, 'BATON_COMMENT not set')
local undo_comment = assert(vim.env.BATON_UNDO_COMMENT, 'BATON_UNDO_COMMENT not set')
local redo_comment = assert(vim.env.BATON_REDO_COMMENT, 'BATON_REDO_COMMENT not set')
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

local function landed()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local data = d.source == 'baton' and d.user_data and d.user_data.lsp and d.user_data.lsp.data
    if data and data.status == 'landed' then
      table.insert(out, { line = d.lnum, hunkId = data.hunkId })
    end
  end
  return out
end

local function kept(hunk_id)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local data = d.source == 'baton' and d.user_data and d.user_data.lsp and d.user_data.lsp.data
    if data and data.hunkId == hunk_id and data.status == 'applied' then
      return true
    end
  end
  return false
end

local function any_baton()
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == 'baton' then
      return true
    end
  end
  return false
end

local function has(text)
  for _, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if line == text then
      return true
    end
  end
  return false
end

local ok, err = pcall(function()
  vim.lsp.buf_attach_client(bufnr, client_id)
  wait_for('the server', function()
    local c = vim.lsp.get_client_by_id(client_id)
    return c and c.initialized
  end, 20000)
  local hunk = wait_for('the landed hunk', function()
    local d = landed()
    return #d == 1 and d[1]
  end)
  table.insert(report.steps, { name = 'landed', data = hunk })
  vim.lsp.buf.execute_command({
    command = 'baton.undo',
    arguments = { { hunkId = hunk.hunkId, comment = comment } },
  })
  wait_for('the undo in the buffer', function() return not has("the agent's line 20") end)
  vim.cmd('write')
  -- Saved and settled: an undone hunk is shown nowhere (in the buffer, unsaved, it was).
  wait_for('the hunk undone', function() return not any_baton() end)
  table.insert(report.steps, { name = 'undone', data = vim.api.nvim_buf_get_lines(bufnr, 19, 20, false) })
  vim.cmd('undo')
  wait_for("the agent's line back in the buffer", function() return has("the agent's line 20") end)
  vim.cmd('write')
  local again = wait_for('the hunk landed again', function()
    local d = landed()
    return #d == 1 and d
  end)
  table.insert(report.steps, { name = 'landed again', data = again })

  -- Undone again and saved, then kept again (the redo writes the agent's line back).
  vim.lsp.buf.execute_command({
    command = 'baton.undo',
    arguments = { { hunkId = hunk.hunkId, comment = undo_comment } },
  })
  wait_for('the second undo in the buffer', function() return not has("the agent's line 20") end)
  vim.cmd('write')
  wait_for('the hunk undone again', function() return not any_baton() end)
  -- One script is one undo block unless broken: a developer's separate keys break it.
  vim.o.undolevels = vim.o.undolevels
  vim.lsp.buf.execute_command({
    command = 'baton.keep',
    arguments = { { hunkId = hunk.hunkId, comment = redo_comment } },
  })
  wait_for('the redo in the buffer', function() return has("the agent's line 20") end)
  vim.cmd('write')
  -- A kept hunk is a hint; its diagnostic stays while the hunk is kept, wherever it is.
  wait_for('the hunk kept', function() return kept(hunk.hunkId) end)
  table.insert(report.steps, { name = 'kept', data = vim.api.nvim_buf_get_lines(bufnr, 19, 20, false) })
  vim.cmd('undo')
  wait_for('the old line back in the buffer', function() return has('line 20') end)
  vim.cmd('write')
  wait_for('the redo taken back: the hunk undone', function() return not any_baton() end)
  table.insert(report.steps, { name = 'redo taken back', data = vim.api.nvim_buf_get_lines(bufnr, 19, 20, false) })
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
