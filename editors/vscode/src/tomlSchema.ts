/**
 * gpa.toml's JSON Schema for Even Better TOML (taplo). package.json contributes it the way that
 * extension reads schemas from others: `contributes.tomlValidation` (fileMatch gpa.toml, url the
 * schema the .vsix carries with the bundled server, gpa_lsp/data/gpa.schema.json, so there is one
 * copy of it). Even Better TOML reads every extension's `packageJSON.contributes.tomlValidation`
 * when it starts and hands each `url` to taplo as it is, and taplo needs an absolute URL: a path
 * relative to the extension's folder, as VS Code resolves `jsonValidation`, is not resolved
 * (tamasfe/taplo#322). So activation turns the relative url into the file: URI of the schema in
 * this installation. The extension activates when the workspace contains a gpa.toml, so this
 * happens before a TOML file opens and starts Even Better TOML.
 */
import * as vscode from "vscode";

export interface TomlValidation {
  fileMatch?: string | string[];
  regexMatch?: string | string[];
  url: string;
}

/** Makes each relative `tomlValidation` url of this extension absolute; returns the urls. */
export function linkTomlSchemas(extension: vscode.Extension<unknown>): string[] {
  const rules: TomlValidation[] = extension.packageJSON?.contributes?.tomlValidation ?? [];
  for (const rule of rules) {
    if (typeof rule.url === "string" && (rule.url.startsWith("./") || rule.url.startsWith("../"))) {
      rule.url = vscode.Uri.joinPath(extension.extensionUri, rule.url).toString();
    }
  }
  return rules.map((r) => r.url);
}
