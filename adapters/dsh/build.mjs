// Bundles dsh's own sources (read from COURIER_DSH_REFERENCE, default
// <workspace>/../shared/reference/dsh) with driver.mjs into dist/driver.mjs.
// dsh is imported at build time only: nothing of it is copied into the project.
import { build } from 'esbuild'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const reference = resolve(process.env.COURIER_DSH_REFERENCE ?? join(here, '../../../shared/reference/dsh'))
if (!existsSync(join(reference, 'packages'))) {
  console.error(`error: no dsh reference at ${reference} (set COURIER_DSH_REFERENCE)`)
  process.exit(2)
}

/** Every package.json under the reference: its name maps to its folder. */
function packages(folder, found = new Map()) {
  for (const entry of readdirSync(folder)) {
    if (entry === 'node_modules' || entry === 'lib') continue
    const path = join(folder, entry)
    if (statSync(path).isDirectory()) packages(path, found)
    else if (entry === 'package.json') found.set(JSON.parse(readFileSync(path, 'utf8')).name, folder)
  }
  return found
}
const byName = packages(reference)

/** `@pkg` is src/index.ts, `@pkg/src/x.ts` is itself, `@pkg/x` is src/x.ts (the exports maps, on sources). */
function sourceOf(specifier) {
  const match = /^(@deepseek-ai\/[^/]+)(?:\/(.*))?$/.exec(specifier)
  const folder = match && byName.get(match[1])
  if (!folder) return undefined
  const sub = match[2]
  if (sub === undefined) return join(folder, 'src/index.ts')
  if (sub.startsWith('src/')) return join(folder, sub)
  return join(folder, 'src', `${sub}.ts`)
}

const dshSources = {
  name: 'dsh-sources',
  setup(b) {
    b.onResolve({ filter: /^@deepseek-ai\// }, (args) => {
      const path = sourceOf(args.path)
      // Packages outside the reference are only ever imported for types.
      return path && existsSync(path) ? { path } : { path: args.path, external: true }
    })
    // `createRequire(import.meta.url)` must see each file's own place, not the bundle's.
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
      return { contents: text, loader: 'ts', resolveDir: dirname(args.path) }
    })
  },
}

// node 20's zlib has no zstd: dsh's JSONL persistence imports it, but with
// compression `none` never calls it. The stubs fail loudly if it ever does.
const ZSTD = ['createZstdDecompress', 'zstdDecompressSync', 'zstdCompress', 'zstdDecompress']
const zlibWithoutZstd = {
  name: 'zlib-without-zstd',
  setup(b) {
    b.onResolve({ filter: /^node:zlib$/ }, (args) =>
      args.namespace === 'zlib-stub' ? { path: 'zlib', external: true } : { path: 'zlib', namespace: 'zlib-stub' })
    b.onLoad({ filter: /.*/, namespace: 'zlib-stub' }, () => ({
      contents: [
        "import * as zlib from 'node:zlib'",
        "export * from 'node:zlib'",
        'const missing = (name) => () => { throw new Error(`zstd (${name}) is not available on this node`) }',
        ...ZSTD.map(name => `export const ${name} = zlib.${name} ?? missing('${name}')`),
        'export const constants = zlib.constants',
      ].join('\n'),
      loader: 'js',
    }))
  },
}

const outfile = join(here, 'dist/driver.mjs')
const built = await build({
  entryPoints: [join(here, 'driver.mjs')],
  outfile,
  // Written below through a temporary file and a rename: a driver that
  // node is running while another build replaces it is read whole, old or
  // new, never half written (an empty bundle runs, prints nothing and
  // exits 0).
  write: false,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['koffi'],
  plugins: [dshSources, zlibWithoutZstd],
  logLevel: 'warning',
  // dsh needs Promise.withResolvers (node 22); node 20 lacks it. The banner
  // runs before any bundled module, and keeps microtask order.
  banner: {
    js: [
      "import { createRequire as __courierRequire } from 'node:module';",
      'const require = __courierRequire(import.meta.url);',
      'Promise.withResolvers ??= function () { let resolve, reject; const promise = new this((a, b) => { resolve = a; reject = b }); return { promise, resolve, reject } };',
    ].join('\n'),
  },
})

mkdirSync(dirname(outfile), { recursive: true })
const [bundle] = built.outputFiles
const temporary = `${outfile}.${process.pid}.tmp`
writeFileSync(temporary, bundle.contents)
renameSync(temporary, outfile)
