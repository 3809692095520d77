/// <reference types="node" />
/**
 * The module graph of src/ has no import circles (tokens.ts once imported events.ts
 * and request.ts, which imported it back).
 */

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const SRC = path.resolve(__dirname, '..');

/** Every .ts module of src/ outside the tests, by path. */
function modules(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== '__tests__') {
      modules(full, out);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      out.push(full);
    }
  }
  return out;
}

/** The local modules `file` imports or re-exports from. */
function localImports(file: string): string[] {
  const source = fs.readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of source.matchAll(
    /(?:import|export)[^;]*?from '(\.[^']+)'/g
  )) {
    const target = path.resolve(path.dirname(file), match[1]);
    for (const candidate of [`${target}.ts`, path.join(target, 'index.ts')]) {
      if (fs.existsSync(candidate)) {
        found.push(candidate);
        break;
      }
    }
  }
  return found;
}

/** The import circles of the graph, each as a list of paths relative to src/. */
function circles(files: string[]): string[][] {
  const graph = new Map(files.map(f => [f, localImports(f)]));
  const done = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string): void => {
    const at = stack.indexOf(file);
    if (at >= 0) {
      found.push([...stack.slice(at), file].map(f => path.relative(SRC, f)));
      return;
    }
    if (done.has(file)) {
      return;
    }
    done.add(file);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      visit(next);
    }
    stack.pop();
  };
  files.forEach(visit);
  return found;
}

describe('imports', () => {
  it('finds a circle when there is one', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'imports-'));
    fs.writeFileSync(path.join(dir, 'a.ts'), "import { b } from './b';\n");
    fs.writeFileSync(path.join(dir, 'b.ts'), "export { a } from './a';\n");
    expect(circles(modules(dir)).length).toBe(1);
  });

  it('has no circle in src/', () => {
    expect(circles(modules(SRC))).toEqual([]);
  });
});
