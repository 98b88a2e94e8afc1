-- Headless test driver (not for users): run with
--   GPA_NVIM_OUT=out.json nvim --headless -u editors/neovim/init.lua -S editors/neovim/test_driver.lua app.cu
-- Waits for gpa's diagnostics, asks for a hover, code actions (applies the first quick fix to
-- the buffer) and code lenses, writes what it saw as JSON, and quits (exit 2 on a failure).

local out_path = assert(os.getenv("GPA_NVIM_OUT"), "set GPA_NVIM_OUT")
local result = { steps = {} }

local function finish(code)
  vim.fn.writefile({ vim.json.encode(result) }, out_path)
  if code == 0 then vim.cmd("qa!") else vim.cmd("cquit " .. code) end
end

local function fail(msg)
  result.error = msg
  finish(2)
end

local ok, err = pcall(function()
  local buf = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[buf].filetype
  local client
  if not vim.wait(30000, function()
    client = vim.lsp.get_clients({ bufnr = buf, name = "gpa" })[1]
    return client ~= nil and client.initialized
  end, 50) then
    return fail("the gpa client did not attach")
  end
  table.insert(result.steps, "attached")

  local diags
  if not vim.wait(60000, function()
    diags = vim.diagnostic.get(buf)
    return #diags > 0
  end, 100) then
    return fail("no diagnostics")
  end
  result.diagnostics = {}
  for _, d in ipairs(diags) do
    table.insert(result.diagnostics, { lnum = d.lnum, code = d.code, severity = d.severity,
                                       source = d.source, message = d.message })
  end
  table.insert(result.steps, "diagnostics")

  -- the diagnostic with a fix and the largest estimate
  local target
  for _, d in ipairs(diags) do
    local lsp = d.user_data and d.user_data.lsp
    if lsp and lsp.data and lsp.data.fix ~= vim.NIL and lsp.data.fix ~= nil then
      if not target or lsp.data.estimate > target.user_data.lsp.data.estimate then target = d end
    end
  end
  if not target then return fail("no diagnostic with a fix") end
  result.target = { lnum = target.lnum, code = target.code }

  local pos = { line = target.lnum, character = target.col }
  local hover = client:request_sync("textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(buf) }, position = pos }, 10000, buf)
  if not hover or hover.err or not hover.result then return fail("no hover") end
  result.hover = hover.result.contents.value
  table.insert(result.steps, "hover")

  local actions = client:request_sync("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = target.user_data.lsp.range,
    context = { diagnostics = { target.user_data.lsp }, only = { "quickfix" } },
  }, 10000, buf)
  if not actions or actions.err or not actions.result or #actions.result == 0 then
    return fail("no code action")
  end
  local fix
  for _, a in ipairs(actions.result) do
    if a.edit then fix = a break end
  end
  if not fix then return fail("no code action with an edit") end
  result.action_title = fix.title
  result.buffer_before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding)
  result.buffer_after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  table.insert(result.steps, "code_action")

  local lenses = client:request_sync("textDocument/codeLens", {
    textDocument = { uri = vim.uri_from_bufnr(buf) } }, 10000, buf)
  if not lenses or lenses.err or not lenses.result then return fail("no code lens") end
  result.lenses = {}
  for _, l in ipairs(lenses.result) do
    table.insert(result.lenses, { line = l.range.start.line, title = l.command and l.command.title or "" })
  end
  table.insert(result.steps, "code_lens")
  result.status = vim.g.gpa_status
  finish(0)
end)
if not ok then fail("driver error: " .. tostring(err)) end
