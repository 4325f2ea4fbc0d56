// *Baton: Accept Edited Version*: accept a pending hunk with the lines the developer typed in
// the right side of its diff. The server decides and applies (`baton.acceptEdited`, the same
// path as `baton.accept`); this file only finds the document, cuts the context off
// (the pure module of the same name), asks before an empty version, and closes the diff once the server said yes.
// The Tasks view and the status bar follow from `baton/didChangeState`, as for any decision.

import * as vscode from 'vscode';
import type { BatonClient } from '../server/client.vscode';
import {
  acceptedMessage,
  EDIT_SCHEME,
  editedVersion,
  emptyVersionQuestion,
  isEditable,
  notPendingMessage,
  parseEditQuery,
} from './editedVersion';
import { errorText } from '../notices/messages';
import * as p from '../protocol';
import type { ProposalFileSystem } from './proposalFileSystem.vscode';

const NO_EDITOR =
  'Baton: Accept Edited Version works in the diff of a pending hunk: open it with Show Hunk Diff ' +
  '(or the Diff lens), edit the right side, then accept.';

/** The `baton-edit:` document the command is about: the URI the editor title passes, else
 * the active editor, else the right side of the active diff (when its left side has focus). */
function editedDocument(arg: unknown): vscode.TextDocument | undefined {
  let uri: vscode.Uri | undefined;
  if (arg instanceof vscode.Uri) {
    uri = arg;
  } else if (vscode.window.activeTextEditor?.document.uri.scheme === EDIT_SCHEME) {
    uri = vscode.window.activeTextEditor.document.uri;
  } else {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (input instanceof vscode.TabInputTextDiff) uri = input.modified;
  }
  if (uri?.scheme !== EDIT_SCHEME) return undefined;
  const key = uri.toString();
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
}

function showsDocument(tab: vscode.Tab, key: string): boolean {
  const input = tab.input;
  if (input instanceof vscode.TabInputTextDiff) return input.modified.toString() === key;
  return input instanceof vscode.TabInputText && input.uri.toString() === key;
}

/** Close every editor of the document without "Save changes?": the edit is accepted, and
 * saving it now would only make a draft of a decided hunk. Reverting one editor reverts
 * the document, so the others close cleanly. */
async function closeEditors(doc: vscode.TextDocument): Promise<void> {
  const key = doc.uri.toString();
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => showsDocument(t, key));
    if (tabs.length === 0) return;
    if (!doc.isDirty) {
      await vscode.window.tabGroups.close(tabs, true);
      continue;
    }
    const active = vscode.window.tabGroups.activeTabGroup.activeTab;
    if (!active || !showsDocument(active, key)) {
      // Shown only in the background: bring it to the front to revert it there.
      await vscode.window.showTextDocument(doc, { preview: true });
    }
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  }
}

async function acceptEditedVersion(
  client: BatonClient,
  proposals: ProposalFileSystem,
  arg?: unknown,
): Promise<p.AcceptResult | undefined> {
  const doc = editedDocument(arg);
  const args = doc && parseEditQuery(doc.uri.query);
  if (!doc || !args) {
    void vscode.window.showWarningMessage(NO_EDITOR);
    return undefined;
  }
  // Asked afresh, not from the diff's cache: what counts is whether it is pending now.
  let content: p.HunkContent;
  try {
    content = await client.request<p.HunkContent>(p.HUNK, args);
  } catch (e) {
    void vscode.window.showErrorMessage(
      `Baton: cannot read hunk ${args.hunkId}: ${errorText(e instanceof Error ? e.message : String(e))}`,
    );
    return undefined;
  }
  // The server would take an accept of an accepted hunk as a no-op and ignore the text:
  // say so instead of letting the edit vanish.
  if (!isEditable(content.hunk)) {
    void vscode.window.showWarningMessage(notPendingMessage(content.hunk));
    return undefined;
  }
  const version = editedVersion(doc.getText(), content);
  if (!version.ok) {
    void vscode.window.showErrorMessage(version.reason);
    return undefined;
  }
  if (version.changed && version.text === '') {
    const accept = 'Accept Empty Version';
    const choice = await vscode.window.showWarningMessage(
      emptyVersionQuestion(content.hunk, version.proposedLines),
      { modal: true },
      accept,
    );
    if (choice !== accept) return undefined;
  }
  const hunk: p.HunkArgs = { hunkId: content.hunk.id, taskId: content.hunk.taskId };
  // Unchanged: a plain accept, so the store does not record an "edited" version that is not.
  const result = version.changed
    ? await client.executeCommand<p.AcceptResult>(p.ACCEPT_EDITED, [
        { ...hunk, text: version.text } satisfies p.AcceptEditedArgs,
      ])
    : await client.executeCommand<p.AcceptResult>(p.ACCEPT, [hunk]);
  if (!result) return undefined; // the server's refusal was shown; the diff stays open
  proposals.forget(doc.uri);
  await closeEditors(doc);
  void vscode.window.showInformationMessage(acceptedMessage(result, version.changed));
  return result;
}

/** The *Accept Edited Version* command (the editor title's ✓ on a `baton-edit:` document). */
export function registerAcceptEditedVersion(client: BatonClient, proposals: ProposalFileSystem): vscode.Disposable {
  return vscode.commands.registerCommand('baton.acceptEditedVersion', (arg?: unknown) =>
    acceptEditedVersion(client, proposals, arg),
  );
}
