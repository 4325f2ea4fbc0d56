// The review keys, said once: the first time the developer decides a hunk in the editor,
// the extension names the keys that exist (remembered in the global state, so once per
// installation, not per window). The keys are package.json's `keybindings`; this is the
// sentence that names them.

/** The global-state key remembering that the keys were told. */
export const KEYS_TOLD = 'baton.keysTold';

/** One key of the review loop, as the keybinding says it. */
export interface ReviewKey {
  key: string;
  mac: string;
  does: string;
}

export const REVIEW_KEYS: readonly ReviewKey[] = [
  { key: 'Alt+F5', mac: '⌥F5', does: 'next hunk' },
  { key: 'Ctrl+Shift+Enter', mac: '⇧⌘Enter', does: 'keep (accept a proposal)' },
  { key: 'Ctrl+Shift+Backspace', mac: '⇧⌘Backspace', does: 'undo (reject a proposal)' },
  { key: 'Ctrl+Shift+Alt+Backspace', mac: '⌥⇧⌘Backspace', does: 'undo with a comment for the agent' },
];

/** "Baton's review keys: Alt+F5 next hunk · …" for this platform. */
export function keysMessage(mac: boolean): string {
  const keys = REVIEW_KEYS.map((k) => `${mac ? k.mac : k.key} ${k.does}`).join(' · ');
  return `Baton's review keys: ${keys}. Ctrl+Z takes a decision made in the buffer back.`;
}
