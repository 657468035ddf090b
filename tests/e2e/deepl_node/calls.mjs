// deepl-node's calls against this server, as its README configures the client: one JSON line per
// call, {"call", "ok", "value" or "error"}. Run by tests/e2e/test_deepl_node.py:
//   node calls.mjs SERVER_URL AUTH_KEY WORK_DIR
import * as deepl from 'deepl-node';
import fs from 'node:fs';
import path from 'node:path';

const [serverUrl, authKey, work] = process.argv.slice(2);
const client = new deepl.DeepLClient(authKey, { serverUrl, maxRetries: 0 });

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

// errors
await call('error:bad-target', async () => client.translateText(en, 'en', 'xx'));
await call('error:unknown-glossary', async () => client.getGlossary('00000000-0000-0000-0000-000000000000'));
