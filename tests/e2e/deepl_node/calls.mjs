// deepl-node's calls against this server, as its README configures the client: one JSON line per
// call, {"call", "ok", "value" or "error"}. Run by tests/e2e/test_deepl_node.py:
//   node calls.mjs SERVER_URL AUTH_KEY WORK_DIR MEMORY_ID
// MEMORY_ID: a translation memory the test made through the native API (#51), deleted here.
import * as deepl from 'deepl-node';
import fs from 'node:fs';
import path from 'node:path';

const [serverUrl, authKey, work, memoryId] = process.argv.slice(2);
// minTimeout: deepl-node's 5 s per request, without retries, is less than a worker's first 'auto'
// takes on a loaded machine (it loads the language detector then, translator/text/detect_sources.py).
const client = new deepl.DeepLClient(authKey, { serverUrl, maxRetries: 0, minTimeout: 60000 });

async function call(name, fn) {
  try {
    const value = await fn();
    console.log(JSON.stringify({ call: name, ok: true, value: value === undefined ? null : value }));
    return value;
  } catch (error) {
    console.log(JSON.stringify({ call: name, ok: false, error: `${error.constructor.name}: ${error.message}` }));
    return undefined;
  }
}

const en = 'Life is like a box of chocolates.';
await call('translateText', async () => (await client.translateText(en, 'en', 'ja')).text);
await call('translateText[]', async () =>
  (await client.translateText([en, 'Where is the library?'], null, 'fr')).map((r) => [r.text, r.detectedSourceLang]));
await call('getSourceLanguages', async () => (await client.getSourceLanguages()).map((l) => l.code).includes('en'));
await call('getTargetLanguages', async () => (await client.getTargetLanguages()).map((l) => l.code).includes('en-US'));
await call('getGlossaryLanguagePairs', async () => (await client.getGlossaryLanguagePairs()).length > 0);
await call('getUsage', async () => (await client.getUsage()).anyLimitReached());

// v2 glossaries
const v2 = await call('createGlossary', async () =>
  (await client.createGlossary('v2 glossary', 'en', 'de', new deepl.GlossaryEntries({ entries: { Hello: 'Hallo' } }))).glossaryId);
await call('createGlossaryWithCsv', async () => {
  const made = await client.createGlossaryWithCsv('v2 csv', 'en', 'de', Buffer.from('Goodbye,Tschüss'));
  await client.deleteGlossary(made);
  return made.entryCount;
});
await call('getGlossary', async () => (await client.getGlossary(v2)).entryCount);
await call('listGlossaries', async () => (await client.listGlossaries()).some((g) => g.glossaryId === v2));
await call('getGlossaryEntries', async () => (await client.getGlossaryEntries(v2)).entries());
await call('translateText+glossary', async () =>
  (await client.translateText('Hello', 'en', 'de', { glossary: v2 })).text);
await call('deleteGlossary', async () => client.deleteGlossary(v2));

// v3 glossaries: sent as forms, `dictionaries[0].source_lang=...` (#50)
const dict = (source, target, entries) =>
  ({ sourceLangCode: source, targetLangCode: target, entries: new deepl.GlossaryEntries({ entries }) });
const v3 = await call('createMultilingualGlossary', async () =>
  (await client.createMultilingualGlossary('v3 glossary', [dict('en', 'de', { Hello: 'Hallo' }), dict('de', 'en', { Hallo: 'Hello' })])).glossaryId);
await call('createMultilingualGlossaryWithCsv', async () => {
  const made = await client.createMultilingualGlossaryWithCsv('v3 csv', 'en', 'fr', 'Hello,Bonjour');
  await client.deleteMultilingualGlossary(made);
  return made.dictionaries.map((d) => d.entryCount);
});
await call('getMultilingualGlossary', async () => (await client.getMultilingualGlossary(v3)).dictionaries.length);
await call('listMultilingualGlossaries', async () => (await client.listMultilingualGlossaries()).some((g) => g.glossaryId === v3));
await call('getMultilingualGlossaryDictionaryEntries', async () =>
  (await client.getMultilingualGlossaryDictionaryEntries(v3, 'en', 'de')).entries.entries());
await call('updateMultilingualGlossaryDictionary', async () =>
  (await client.updateMultilingualGlossaryDictionary(v3, dict('en', 'de', { Goodbye: 'Tschüss' }))).dictionaries.map((d) => d.entryCount));
await call('updateMultilingualGlossaryDictionaryWithCsv', async () =>
  (await client.updateMultilingualGlossaryDictionaryWithCsv(v3, 'en', 'de', 'Thanks,Danke')).dictionaries.map((d) => d.entryCount));
await call('replaceMultilingualGlossaryDictionary', async () =>
  (await client.replaceMultilingualGlossaryDictionary(v3, dict('de', 'en', { Danke: 'Thanks' }))).entryCount);
await call('replaceMultilingualGlossaryDictionaryWithCsv', async () =>
  (await client.replaceMultilingualGlossaryDictionaryWithCsv(v3, 'de', 'en', 'Tschüss,Goodbye')).entryCount);
await call('updateMultilingualGlossaryName', async () => (await client.updateMultilingualGlossaryName(v3, 'renamed')).name);
await call('translateText+v3', async () => (await client.translateText('Hello', 'en', 'de', { glossary: v3 })).text);
await call('deleteMultilingualGlossaryDictionary', async () => client.deleteMultilingualGlossaryDictionary(v3, 'de', 'en'));
await call('deleteMultilingualGlossary', async () => client.deleteMultilingualGlossary(v3));

// documents
const input = path.join(work, 'document.txt');
fs.writeFileSync(input, en);
await call('translateDocument', async () => {
  const output = path.join(work, 'document.ja.txt');
  fs.rmSync(output, { force: true });
  const status = await client.translateDocument(input, output, 'en', 'ja');
  return [status.status, fs.readFileSync(output, 'utf8')];
});

// translation memories (#51): the one the test made, as deepl-node parses DeepL's answers
const held = 'Welcome to Berlin!';
const notHeld = 'Tickets are cheaper for students.';
const memory = await call('listTranslationMemories', async () => {
  const mine = (await client.listTranslationMemories()).find((m) => m.translationMemoryId === memoryId);
  return mine === undefined ? null : mine;
});
await call('listTranslationMemories(page)', async () =>
  [(await client.listTranslationMemories(0, 1)).length, (await client.listTranslationMemories(1000, 1)).length]);
await call('getTranslationMemory', async () => client.getTranslationMemory(memoryId));
await call('getTranslationMemory(info)', async () => (await client.getTranslationMemory(memory)).translationMemoryId);
const page = (p) => ({
  sources: p.segments.map((s) => s.sourceText),
  targets: p.segments.map((s) => s.targets.map((t) => [t.targetLanguage, t.targetText])),
  segmentCount: p.segmentCount,
  more: p.nextPageCursor !== undefined,
});
const first = await call('listTranslationMemorySegments', async () => client.listTranslationMemorySegments(memoryId, { pageSize: 1 }));
await call('listTranslationMemorySegments(page 1)', async () => page(first));
await call('listTranslationMemorySegments(page 2)', async () =>
  page(await client.listTranslationMemorySegments(memory, { pageSize: 1, pageCursor: first.nextPageCursor })));
await call('listTranslationMemorySegments(filter)', async () =>
  page(await client.listTranslationMemorySegments(memoryId, { filterText: 'SEITE' })).sources);
await call('listTranslationMemorySegments(filter, case)', async () =>
  page(await client.listTranslationMemorySegments(memoryId, { filterText: 'SEITE', filterCaseSensitive: true })).sources);
await call('translateText+memory', async () =>
  (await client.translateText(held, 'en', 'de', { translationMemory: memoryId })).text);
await call('translateText+memory+threshold', async () =>
  (await client.translateText([held, notHeld, 'Page 4 of 12'], 'en', 'de',
    { translationMemory: memory, translationMemoryThreshold: 80 })).map((r) => r.text));
await call('translateText+memory(fr)', async () =>
  (await client.translateText([held, 'Where is the library?'], 'en', 'fr', { translationMemory: memory })).map((r) => r.text));
const memoryInput = path.join(work, 'memory.txt');
fs.writeFileSync(memoryInput, `${held}\n\n${notHeld}\n`);
await call('translateDocument+memory', async () => {
  const output = path.join(work, 'memory.de.txt');
  fs.rmSync(output, { force: true });
  const status = await client.translateDocument(memoryInput, output, 'en', 'de', { translationMemory: memoryId });
  return [status.status, fs.readFileSync(output, 'utf8')];
});
// DeepL's upload-URL import and export jobs are not offered: a 403 that names POST /memories.
await call('error:memory-import', async () => client.createTranslationMemoryImport('legal.tmx', 100));
await call('error:memory-export', async () => client.createTranslationMemoryExport(memoryId));
await call('error:memory-job', async () => client.getTranslationMemoryJob('job-1'));
await call('error:memory-export-to-file', async () =>
  client.exportTranslationMemoryToFilepath(memoryId, path.join(work, 'memory.tmx'), { timeoutMs: 1000 }));
await call('deleteTranslationMemory', async () => client.deleteTranslationMemory(memory));
await call('error:deleted-memory', async () => client.getTranslationMemory(memoryId));
await call('error:translate-deleted-memory', async () =>
  client.translateText(held, 'en', 'de', { translationMemory: memoryId }));

// errors
await call('error:bad-target', async () => client.translateText(en, 'en', 'xx'));
await call('error:unknown-glossary', async () => client.getGlossary('00000000-0000-0000-0000-000000000000'));
