-- Neovim (0.7+) reviewing an agent's hunks through `baton serve`, driven headless by
-- tests/editors/test_neovim.py:
--
--   nvim --headless --clean -n -i NONE -u NONE -c 'luafile review.lua' <file>
--
-- Everything goes through Neovim's own LSP client: diagnostics, `vim.lsp.buf.code_action()`
-- (with `vim.ui.select` answered by title, as a user would pick), code lenses, the server's
-- `workspace/applyEdit`, `:write` and the didSave it sends. The script checks each step,
-- writes a JSON report to $BATON_REPORT and exits 0 (`qall!`) or 1 (`cquit 1`).
--
-- Environment: BATON_PYTHON (interpreter with baton installed), BATON_ROOT (workspace
-- folder), BATON_REPORT (where to write the report), BATON_TIMEOUT_MS (per wait).

local python = assert(vim.env.BATON_PYTHON, 'BATON_PYTHON not set')
local root = assert(vim.env.BATON_ROOT, 'BATON_ROOT not set')
local report_path = assert(vim.env.BATON_REPORT, 'BATON_REPORT not set')
local timeout = tonumber(vim.env.BATON_TIMEOUT_MS or '5000')

local report = {
  ok = false,
  nvim = tostring(vim.version().major) .. '.' .. vim.version().minor .. '.' .. vim.version().patch,
  steps = {},
  messages = {},
  apply_edits = {},
  commands = {},
  selections = {},
  state_changes = {},
}

local function step(name, data)
  table.insert(report.steps, { name = name, ms = vim.loop.hrtime() / 1e6, data = data })
end

local function write_report()
  local f = assert(io.open(report_path, 'w'))
  f:write(vim.fn.json_encode(report))
  f:close()
end

local function wait_for(what, cond)
  local result
  local ok = vim.wait(timeout, function()
    result = cond()
    return result and true or false
  end, 20)
  if not ok then
    error('timed out after ' .. timeout .. ' ms waiting for ' .. what, 2)
  end
  return result
end

local function check(cond, message)
  if not cond then
    error('check failed: ' .. message, 2)
  end
end

-- --- the client ------------------------------------------------------------------------

local default_apply = vim.lsp.handlers['workspace/applyEdit']

local handlers = {
  ['window/showMessage'] = function(_, result)
    table.insert(report.messages, { type = result.type, message = result.message })
  end,
  ['window/logMessage'] = function() end,
  ['baton/didChangeState'] = function(_, params)
    table.insert(report.state_changes, params.reason)
  end,
  ['workspace/applyEdit'] = function(err, params, ctx, config)
    local response = default_apply(err, params, ctx, config)
    table.insert(report.apply_edits, {
      label = params.label,
      has_changes = params.edit.changes ~= nil,
      has_document_changes = params.edit.documentChanges ~= nil,
      applied = response and response.applied,
    })
    return response
  end,
  ['workspace/executeCommand'] = function(err, result, ctx)
    table.insert(report.commands, {
      command = ctx.params.command,
      error = err and err.message or nil,
      outcome = type(result) == 'table' and result.outcome or nil,
    })
  end,
}

-- `vim.lsp.codelens.run()` calls the global handler for its executeCommand answer.
vim.lsp.handlers['workspace/executeCommand'] = handlers['workspace/executeCommand']

local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = 'baton',
  cmd = { python, '-m', 'baton', 'serve' },
  cmd_cwd = root,
  root_dir = root,
  workspace_folders = { { uri = vim.uri_from_fname(root), name = 'project' } },
  handlers = handlers,
})

local function client()
  return vim.lsp.get_client_by_id(client_id)
end

local function baton_diagnostics()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == 'baton' then
      local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data or {}
      table.insert(out, {
        line = d.lnum,
        end_line = d.end_lnum,
        col = d.col,
        end_col = d.end_col,
        message = d.message,
        severity = d.severity,
        hunkId = data.hunkId,
        taskId = data.taskId,
        status = data.status,
      })
    end
  end
  table.sort(out, function(a, b) return a.line < b.line end)
  return out
end

local function diagnostic_of(hunk_id)
  for _, d in ipairs(baton_diagnostics()) do
    if d.hunkId == hunk_id then
      return d
    end
  end
end

local function lenses()
  local out = {}
  for _, lens in ipairs(vim.lsp.codelens.get(bufnr)) do
    table.insert(out, {
      line = lens.range.start.line,
      title = lens.command and lens.command.title,
      command = lens.command and lens.command.command,
      hunkId = lens.command and lens.command.arguments and lens.command.arguments[1].hunkId,
    })
  end
  return out -- in the server's order
end

local function refresh_lenses(expected)
  vim.lsp.codelens.refresh()
  return wait_for(expected .. ' code lenses', function()
    local now = lenses()
    return #now == expected and now
  end)
end

-- Answer the next `vim.ui.select` with the item whose label starts with `prefix`.
local function pick(prefix)
  vim.ui.select = function(items, opts, on_choice)
    local labels, chosen = {}, nil
    for _, item in ipairs(items) do
      local label = opts.format_item and opts.format_item(item) or tostring(item)
      table.insert(labels, label)
      if not chosen and vim.startswith(label, prefix) then
        chosen = item
      end
    end
    table.insert(report.selections, { prompt = opts.prompt, labels = labels, wanted = prefix })
    on_choice(chosen)
  end
end

local function commands_done(n)
  return function() return #report.commands >= n end
end

local function buffer_lines()
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, true)
end

-- --- the review ------------------------------------------------------------------------

local function main()
  check(client_id, 'vim.lsp.start_client returned nil')
  check(vim.lsp.buf_attach_client(bufnr, client_id), 'buf_attach_client failed')
  wait_for('the server to initialize', function()
    return client() and client().initialized
  end)

  local initial = wait_for('4 pending hunks as diagnostics', function()
    local ds = baton_diagnostics()
    return #ds == 4 and ds
  end)
  step('diagnostics', initial)
  for _, d in ipairs(initial) do
    check(d.status == 'pending', 'a hunk is ' .. tostring(d.status) .. ', not pending')
    check(vim.startswith(d.message, 'Agent proposes: '), 'message: ' .. d.message)
  end
  local a, b, c, d = initial[1], initial[2], initial[3], initial[4]

  step('lenses', refresh_lenses(3 * 4))

  -- Accept the first hunk with the code action a user picks from the menu.
  vim.api.nvim_win_set_cursor(0, { a.line + 1, 0 })
  pick('Baton: Accept — ')
  vim.lsp.buf.code_action()
  wait_for('baton.accept to finish', commands_done(1))
  check(report.commands[1].command == 'baton.accept', 'ran ' .. report.commands[1].command)
  check(report.commands[1].error == nil, 'accept failed: ' .. tostring(report.commands[1].error))
  wait_for('the accepted hunk to show as in the buffer', function()
    local now = diagnostic_of(a.hunkId)
    return now and now.status == 'in_buffer'
  end)
  step('accepted', { hunk = a.hunkId, lines = buffer_lines(), diagnostics = baton_diagnostics() })

  -- Reject the second, wherever it sits now (the accepted hunk may have moved it).
  local b_now = wait_for('the second hunk', function() return diagnostic_of(b.hunkId) end)
  vim.api.nvim_win_set_cursor(0, { b_now.line + 1, 0 })
  pick('Baton: Reject — ')
  vim.lsp.buf.code_action()
  wait_for('baton.reject to finish', commands_done(2))
  check(report.commands[2].command == 'baton.reject', 'ran ' .. report.commands[2].command)
  check(report.commands[2].error == nil, 'reject failed: ' .. tostring(report.commands[2].error))
  wait_for('the rejected hunk to disappear', function()
    return diagnostic_of(b.hunkId) == nil
  end)
  step('rejected', { hunk = b.hunkId, diagnostics = baton_diagnostics() })

  -- Two hunks still pending: three lenses each. Accept the last one from its lens.
  local after = refresh_lenses(3 * 2)
  step('lenses after review', after)
  local d_now = wait_for('the last hunk', function() return diagnostic_of(d.hunkId) end)
  vim.api.nvim_win_set_cursor(0, { d_now.line + 1, 0 })
  pick('Accept')
  vim.lsp.codelens.run()
  wait_for('the lens command to finish', commands_done(3))
  check(report.commands[3].command == 'baton.accept', 'lens ran ' .. report.commands[3].command)
  check(report.commands[3].error == nil, 'lens failed: ' .. tostring(report.commands[3].error))
  wait_for('the lens-accepted hunk to show as in the buffer', function()
    local now = diagnostic_of(d.hunkId)
    return now and now.status == 'in_buffer'
  end)
  step('lens accepted', { hunk = d.hunkId, lines = buffer_lines() })

  -- Save: the server settles both effects from the file now on disk. Neovim's default
  -- 'fixendofline' adds the final newline this file lacks; the server must still
  -- recognise the last hunk as applied.
  local changes_before_save = #report.state_changes
  vim.cmd('write')
  wait_for('both accepted hunks to show as applied after the save', function()
    local da, dd = diagnostic_of(a.hunkId), diagnostic_of(d.hunkId)
    return da and dd and da.status == 'applied' and dd.status == 'applied'
  end)
  -- baton/didChangeState is the last thing the server does for a save: after it, the
  -- server is idle and can be shut down without cutting a handler short.
  wait_for('the server to finish with the save', function()
    return #report.state_changes > changes_before_save
  end)
  local final = baton_diagnostics()
  step('saved', { diagnostics = final, lines = buffer_lines(), eol = vim.bo.eol })
  check(diagnostic_of(c.hunkId).status == 'pending', 'the untouched hunk is not pending')

  report.roles = { accepted = a.hunkId, rejected = b.hunkId, untouched = c.hunkId,
                   lens_accepted = d.hunkId }
  report.ok = true
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  report.error = tostring(err)
  report.diagnostics_at_failure = baton_diagnostics()
end

-- Stop the server cleanly (shutdown + exit) so its database is closed before we quit.
if client() then
  client().stop()
  vim.wait(3000, function() return vim.lsp.client_is_stopped(client_id) end, 20)
end
report.server_stopped = vim.lsp.client_is_stopped(client_id)
write_report()
if report.ok then
  vim.cmd('qall!')
else
  vim.cmd('cquit 1')
end
