/**
 * A database URL as it may be shown (a log line, doctor, an error): its password replaced by ***.
 * Something that does not parse as a URL is not shown at all: it might be nothing but a secret.
 */
export function maskUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '(a URL that does not parse)';
  }
  if (u.password) u.password = '***';
  return u.toString();
}
