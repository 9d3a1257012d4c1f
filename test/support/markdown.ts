import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Reading the repository's markdown for the tests that keep the docs honest: fenced code blocks (with the
 * section they are in and the `<!-- tutorial-test: ... -->` note right above them), and the example
 * requests those blocks hold, in the three forms the docs write them:
 *
 * - a fenced `http` block: `METHOD /api/path`, optional header lines, a blank line, the JSON body; several
 *   requests in one block are separated by a line `###`;
 * - a `curl` command in a shell block, with `-X METHOD`, the URL and a `-d`/`--data`/`--data-raw`/
 *   `--data-binary` JSON body in single quotes;
 * - the tutorial's helper, `api METHOD PATH` with its body on standard input: a here-document (`<<JSON` ...
 *   `JSON`) or a here-string (`<<< '{...}'`).
 */

export interface CodeBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  /** The `## ` heading the block is under ('' before the first one). */
  section: string;
  /** The text of a `<!-- tutorial-test: ... -->` comment just above the block, if any. */
  note?: string;
}

export interface ExampleRequest {
  file: string;
  line: number;
  method: string;
  /** The path below the API base, without the query string (`/connectors/$HR/import`). */
  path: string;
  /** The query string without `?` ('' when none). */
  query: string;
  /** The body text as the doc writes it (shell variables unexpanded); undefined when there is none. */
  body?: string;
  form: 'http' | 'curl' | 'api';
}

export const REPO = path.resolve(__dirname, '../..');

/** README.md and every docs/*.md, as repository-relative paths. */
export function docFiles(): string[] {
  const docs = readdirSync(path.join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

export function readDoc(file: string): string {
  return readFileSync(path.join(REPO, file), 'utf8');
}

/** Every fenced code block of a markdown text. */
export function codeBlocks(file: string, markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const out: CodeBlock[] = [];
  let section = '';
  let lastNote: { text: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const fence = /^(\s*)(```+|~~~+)\s*([\w+-]*)/.exec(l);
    if (fence) {
      const close = fence[2];
      const body: string[] = [];
      let j = i + 1;
      while (j < lines.length && !lines[j].trimStart().startsWith(close)) body.push(lines[j++]);
      const block: CodeBlock = { file, line: i + 1, lang: fence[3].toLowerCase(), code: body.join('\n'), section };
      if (lastNote && lastNote.line === i - 1) block.note = lastNote.text;
      out.push(block);
      i = j;
      continue;
    }
    if (/^## /.test(l)) section = l.slice(3).trim();
    const note = /^<!--\s*tutorial-test:\s*(.*?)\s*-->\s*$/.exec(l);
    if (note) lastNote = { text: note[1], line: i };
  }
  return out;
}

const METHODS = 'GET|POST|PUT|DELETE|PATCH';

/** The example requests of one code block. */
export function requestsOf(block: CodeBlock): ExampleRequest[] {
  if (block.lang === 'http') return httpRequests(block);
  if (['sh', 'bash', 'shell', 'console', ''].includes(block.lang)) return [...curlRequests(block), ...apiRequests(block)];
  return [];
}

function splitTarget(target: string): { path: string; query: string } {
  const q = target.indexOf('?');
  return q < 0 ? { path: target, query: '' } : { path: target.slice(0, q), query: target.slice(q + 1) };
}

/** `/api/x` or `http://host:port/api/x` (or `$API/x`) to `/x`; undefined when it is not an API URL. */
function apiPath(url: string): string | undefined {
  const m = /^(?:https?:\/\/[^/\s]+)?\/api(\/[^\s]*)$/.exec(url) ?? /^\$\{?API\}?(\/[^\s]*)$/.exec(url);
  return m ? m[1] : undefined;
}

function httpRequests(block: CodeBlock): ExampleRequest[] {
  const out: ExampleRequest[] = [];
  const lines = block.code.split('\n');
  let start = 0;
  for (let i = 0; i <= lines.length; i++) {
    if (i < lines.length && lines[i].trim() !== '###') continue;
    const part = lines.slice(start, i);
    const offset = start;
    start = i + 1;
    const first = part.findIndex((l) => l.trim() !== '' && !l.trim().startsWith('#'));
    if (first < 0) continue;
    const m = new RegExp(`^(${METHODS})\\s+(\\S+)(?:\\s+HTTP/[\\d.]+)?\\s*$`).exec(part[first].trim());
    if (!m) throw new Error(`${block.file}:${block.line + 1 + offset + first}: an http block's request starts with 'METHOD /api/path', not '${part[first]}'`);
    const p = apiPath(m[2]);
    if (!p) throw new Error(`${block.file}:${block.line + 1 + offset + first}: '${m[2]}' is not a path below /api`);
    let j = first + 1;
    while (j < part.length && part[j].trim() !== '') j++; // headers
    const body = part
      .slice(j + 1)
      .join('\n')
      .trim();
    out.push({ file: block.file, line: block.line + 1 + offset + first, method: m[1], ...splitTarget(p), ...(body ? { body } : {}), form: 'http' });
  }
  return out;
}

/** A shell command line with its `\`-continued lines joined, and the line it started on. */
function shellCommands(code: string): Array<{ text: string; line: number }> {
  const out: Array<{ text: string; line: number }> = [];
  const lines = code.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let text = lines[i];
    while (text.endsWith('\\') && i + 1 < lines.length) text = text.slice(0, -1) + ' ' + lines[++i];
    out.push({ text, line: start });
  }
  return out;
}

/** Shell words of a command (single and double quotes honoured, no expansion). */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      cur += text.slice(i + 1, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
      inWord = true;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') {
        if (text[j] === '\\' && j + 1 < text.length) j++;
        cur += text[j++];
      }
      i = j;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else if (c === '#' && !inWord) {
      break;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

function curlRequests(block: CodeBlock): ExampleRequest[] {
  const out: ExampleRequest[] = [];
  for (const { text, line } of shellCommands(block.code)) {
    const words = shellWords(text);
    const at = words.indexOf('curl');
    if (at < 0) continue;
    let method: string | undefined;
    let url: string | undefined;
    let body: string | undefined;
    for (let i = at + 1; i < words.length; i++) {
      const w = words[i];
      if (w === '-X' || w === '--request') method = words[++i];
      else if (['-d', '--data', '--data-raw', '--data-binary'].includes(w)) body = words[++i];
      else if (['-H', '--header', '-o', '--output', '-u', '--user', '-w', '--write-out'].includes(w)) i++;
      else if (!w.startsWith('-') && apiPath(w) !== undefined) url = w;
    }
    if (!url) continue;
    const p = apiPath(url)!;
    out.push({
      file: block.file,
      line: block.line + 1 + line,
      method: method ?? (body === undefined ? 'GET' : 'POST'),
      ...splitTarget(p),
      ...(body === undefined ? {} : { body }),
      form: 'curl',
    });
  }
  return out;
}

function apiRequests(block: CodeBlock): ExampleRequest[] {
  const out: ExampleRequest[] = [];
  const lines = block.code.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = new RegExp(`^\\s*api\\s+(${METHODS})\\s+(\\S+)(.*)$`).exec(lines[i]);
    if (!m) continue;
    const startLine = i;
    const target = m[2].replace(/^["']|["']$/g, '');
    const rest = m[3];
    let body: string | undefined;
    const here = /<<-?\s*(['"]?)(\w+)\1/.exec(rest);
    const str = /<<<\s*'([^']*)'/.exec(rest);
    if (str) body = str[1];
    else if (here) {
      const end = lines.findIndex((l, k) => k > i && l.trim() === here[2]);
      if (end < 0) throw new Error(`${block.file}:${block.line + 1 + i}: the here-document ${here[2]} never ends`);
      body = lines.slice(i + 1, end).join('\n');
      i = end;
    }
    out.push({
      file: block.file,
      line: block.line + 1 + startLine,
      method: m[1],
      ...splitTarget(target),
      ...(body === undefined ? {} : { body }),
      form: 'api',
    });
  }
  return out;
}
