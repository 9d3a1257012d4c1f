import { Type } from '@sinclair/typebox';
import type { CustomConnectorOperations } from '../../../lib/connectors/custom';
import { createCustomConnector, customConnectorImplementation, registerCustomConnector } from '../../../lib/connectors/registry';
import { hasDeltaImport, hasExport, hasFullImport, type DeltaPage, type ExportChange, type ImportPage } from '../../../lib/connectors/sdk';

/** A custom connector written the spec's way: FullImport(), DeltaImport(), Export() over an in-memory list. */
function memoryConnector(settings: Record<string, unknown>): CustomConnectorOperations {
  const people = new Map<string, string>([
    ['1', 'Ada'],
    ['2', 'Grace'],
  ]);
  const prefix = String(settings.prefix);
  return {
    async *FullImport({ pageSize }): AsyncIterable<ImportPage> {
      const all = [...people].map(([anchor, name]) => ({ anchor, objectType: 'User', attributes: { name: prefix + name } }));
      for (let i = 0; i < all.length; i += pageSize) {
        const last = i + pageSize >= all.length;
        yield { objects: all.slice(i, i + pageSize), errors: [], cursor: last ? null : String(i + pageSize), watermark: last ? 'w1' : undefined };
      }
    },
    async Export(change: ExportChange) {
      if (change.kind === 'delete') people.delete(change.anchor!);
      else people.set(change.anchor!, String(change.attributes.name));
      return { status: 'success', anchor: change.anchor! };
    },
  };
}

describe('custom connector registry', () => {
  beforeAll(() => {
    registerCustomConnector('memory-test', memoryConnector, {
      settingsSchema: Type.Object({ prefix: Type.String({ default: '' }) }, { $id: 'MemoryTestSettings', additionalProperties: false }),
    });
  });

  test('a name registers once', () => {
    expect(customConnectorImplementation('memory-test')?.name).toBe('memory-test');
    expect(() => registerCustomConnector('memory-test', memoryConnector)).toThrow(/already registered/);
    expect(() => registerCustomConnector('bad name!', memoryConnector)).toThrow(/not a valid/);
  });

  test('the spec operations are adapted to the SDK capabilities, settings validated with defaults', async () => {
    const c = createCustomConnector({ implementation: 'memory-test', settings: { prefix: 'Dr. ' } });
    expect(c.type).toBe('custom');
    expect(hasFullImport(c) && hasDeltaImport(c) && hasExport(c)).toBe(true);
    const pages: ImportPage[] = [];
    for await (const p of c.fullImport!({ pageSize: 1 })) pages.push(p);
    expect(pages.map((p) => [p.objects[0].attributes.name, p.cursor])).toEqual([
      ['Dr. Ada', '1'],
      ['Dr. Grace', null],
    ]);
    expect(await c.export!({ kind: 'delete', objectType: 'User', anchor: '1', attributes: {} })).toEqual({ status: 'success', anchor: '1' });
    // Without DeltaImport(), a delta asks for a full import.
    const deltas: DeltaPage[] = [];
    for await (const p of c.deltaImport!('w1', { pageSize: 10 })) deltas.push(p);
    expect(deltas).toEqual([{ changes: [], errors: [], fullImportRequired: { reason: expect.any(String) } }]);
    expect((await c.testConnection()).message).toEqual(expect.any(String));

    const defaults = createCustomConnector({ implementation: 'memory-test' });
    const first: ImportPage[] = [];
    for await (const p of defaults.fullImport!({ pageSize: 5 })) first.push(p);
    expect(first[0].objects.map((o) => o.attributes.name)).toEqual(['Ada', 'Grace']);
  });

  test('bad settings are configuration_invalid naming the field', () => {
    expect(() => createCustomConnector({ implementation: 'memory-test', settings: { prefix: 5 } })).toThrow(
      expect.objectContaining({ code: 'configuration_invalid', message: expect.stringContaining('/config/settings/prefix') }),
    );
  });
});
