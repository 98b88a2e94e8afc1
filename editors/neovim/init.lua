-- gpa-lsp in Neovim (>= 0.11): copy this into your config (e.g. ~/.config/nvim/after/plugin/gpa.lua)
-- or start with `nvim -u init.lua file.cu`. Needs gpa-lsp installed: `python3 -m pip install /path/to/gpa-lsp`
-- (the repository, or the wheel `python3 -m pip wheel --no-deps /path/to/gpa-lsp` builds); it puts `gpa-lsp` on PATH.

vim.filetype.add({ extension = { cu = "cuda", cuh = "cuda" } })

-- The server command: `gpa-lsp` (same as `gpa serve`). GPA_LSP_CMD (a JSON list) overrides it,
-- which the headless test uses to run the checkout's server.
local cmd = { "gpa-lsp" }
if os.getenv("GPA_LSP_CMD") then
  cmd = vim.json.decode(os.getenv("GPA_LSP_CMD"))
end

vim.lsp.config("gpa", {
  cmd = cmd,
  filetypes = { "cuda" },
  root_markers = { "gpa.toml", "pyproject.toml", ".git" },
  -- Building and profiling run the project's commands. Only say `trusted = true` for
  -- projects you trust, or list trusted folders in settings.gpa.trustedWorkspaces below.
  -- Without trust the server still shows a project's recorded bundle.
  init_options = { trusted = os.getenv("GPA_TRUSTED") == "1" },
  settings = {
    gpa = {
      trustedWorkspaces = {},                -- e.g. { "~/src/my-cuda-project" }
      advice = { warning = 1.10, information = 1.05 },
      server = { runOnSave = true, debounceMs = 500 },
      -- profile = { collector = "cupti" },  -- or "ncu", or "replay" (show the recorded bundle)
    },
  },
  handlers = {
    -- the status line: building / profiling / analysing / error / untrusted
    ["gpa/status"] = function(_, result)
      vim.g.gpa_status = result
      if result.state == "error" then
        vim.notify("gpa: " .. result.message, vim.log.levels.ERROR)
      end
    end,
    -- per-line share of samples: shown as a right-aligned virtual text
    ["gpa/lineHeat"] = function(_, result)
      local bufnr = vim.uri_to_bufnr(result.uri)
      local ns = vim.api.nvim_create_namespace("gpa_heat")
      vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
      for _, l in ipairs(result.lines) do
        if l.share >= 0.01 and l.line < vim.api.nvim_buf_line_count(bufnr) then
          vim.api.nvim_buf_set_extmark(bufnr, ns, l.line, 0, {
            virt_text = { { string.format("%4.1f%%", 100 * l.share), "Comment" } },
            virt_text_pos = "right_align",
          })
        end
      end
    end,
  },
})
vim.lsp.enable("gpa")

vim.api.nvim_create_autocmd("LspAttach", {
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if not client or client.name ~= "gpa" then
      return
    end
    -- code lenses above kernels (share of samples, limiter, top advice)
    vim.lsp.codelens.refresh({ bufnr = args.buf })
    vim.api.nvim_create_autocmd({ "BufWritePost", "InsertLeave" }, {
      buffer = args.buf,
      callback = function() vim.lsp.codelens.refresh({ bufnr = args.buf }) end,
    })
    vim.keymap.set("n", "<leader>gr", function()
      client:exec_cmd({ title = "report", command = "gpa.report" }, { bufnr = args.buf }, function(_, res)
        if res then
          vim.cmd("new")
          vim.bo.filetype = "markdown"
          vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(res.markdown, "\n"))
        end
      end)
    end, { buffer = args.buf, desc = "GPA report" })
    vim.keymap.set("n", "<leader>gp", function()
      client:exec_cmd({ title = "profile", command = "gpa.profile" }, { bufnr = args.buf })
    end, { buffer = args.buf, desc = "GPA profile now" })
  end,
})
