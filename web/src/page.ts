// What the views need of the page (main.ts sets it at start): whether the session may change
// things, an action that calls the API (a refusal is shown in the API's words, then the view
// reloads), a message, a redraw, and who is signed in.

export interface Page {
  canWrite(): boolean;
  act(fn: () => Promise<unknown>, done?: string): Promise<boolean>;
  toast(message: string, kind?: 'error' | 'info'): void;
  render(): void;
  /** Reloads what the view shows, then draws it. */
  refresh(): Promise<void>;
  /** The session's name (its API key's): who asks when the board requests something. */
  who(): string;
}

export const page: Page = {
  canWrite: () => false,
  act: async () => false,
  toast: () => undefined,
  render: () => undefined,
  refresh: async () => undefined,
  who: () => '',
};

export const usePage = (p: Page): void => void Object.assign(page, p);
