/**
 * Tool input schemas as MCP clients get them: nullable types written as `anyOf` (the Inspector's
 * strict mode warned 26 times on `"type": ["string", "null"]` in the vault's tools), accepting exactly
 * what the manifest accepts.
 */
import * as path from 'node:path';
import { Ajv } from 'ajv';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { portableSchema } from '../../kernel/mcp/mcp-tool-mapping.js';
import { makeKernel } from '../helpers/kernel-fixture.js';
import { connect } from './mcp-helpers.js';

/** Every place in a schema where `type` is a list with null in it. */
function nullableTypeLists(schema: unknown, at = '$'): string[] {
  if (Array.isArray(schema)) return schema.flatMap((s, i) => nullableTypeLists(s, `${at}[${i}]`));
  if (typeof schema !== 'object' || schema === null) return [];
  const type = (schema as { type?: unknown }).type;
  const own = Array.isArray(type) && type.includes('null') ? [at] : [];
  return [...own, ...Object.entries(schema).flatMap(([k, v]) => nullableTypeLists(v, `${at}.${k}`))];
}

describe('tool schemas served over MCP', () => {
  it('write a nullable type as anyOf: the type’s keywords in its branch, the annotations outside, null out of the enum', () => {
    expect(portableSchema({ type: ['string', 'null'], minLength: 1, maxLength: 32, description: 'A colour; null clears it.' })).toEqual({
      description: 'A colour; null clears it.',
      anyOf: [{ type: 'string', minLength: 1, maxLength: 32 }, { type: 'null' }],
    });
    expect(portableSchema({ type: ['string', 'null'], enum: ['low', 'high', null], default: null })).toEqual({
      default: null,
      anyOf: [{ type: 'string', enum: ['low', 'high'] }, { type: 'null' }],
    });
    // Deep inside, and a property that happens to be called "type" is a property, not a keyword.
    expect(
      portableSchema({
        type: 'object',
        properties: { type: { type: 'string' }, tags: { type: ['array', 'null'], items: { type: 'string' } } },
        required: ['type'],
      }),
    ).toEqual({
      type: 'object',
      properties: { type: { type: 'string' }, tags: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] } },
      required: ['type'],
    });
    expect(portableSchema({ type: ['string', 'number'] })).toEqual({ type: ['string', 'number'] });
  });

  it('accept exactly what the manifest accepts', () => {
    const ajv = new Ajv({ strict: false });
    const manifest = {
      type: 'object',
      properties: { color: { type: ['string', 'null'], minLength: 1, maxLength: 5 }, level: { type: ['string', 'null'], enum: ['a', 'b', null] } },
      additionalProperties: false,
    };
    const original = ajv.compile(manifest);
    const served = ajv.compile(portableSchema(manifest) as object);
    const samples = [
      {},
      { color: null },
      { color: 'red' },
      { color: '' },
      { color: 'purple' },
      { color: 3 },
      { level: null },
      { level: 'a' },
      { level: 'c' },
      { x: 1 },
    ];
    for (const s of samples) expect([s, served(s)]).toEqual([s, original(s)]);
  });

  it('have no nullable type list in any bundled tool over tools/list', async () => {
    const fx = makeKernel();
    await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    const endpoint = new McpHttpEndpoint(fx.kernel);
    await endpoint.start();
    const c = await connect(endpoint.url, endpoint.token);
    try {
      const { tools } = await c.client.listTools();
      expect(tools.length).toBeGreaterThan(90);
      // The vault's manifest has them (the pipeline validates against it): the served schemas do not.
      expect(fx.kernel.registry.list().flatMap((t) => nullableTypeLists(t.spec.parameters)).length).toBeGreaterThan(20);
      expect(tools.flatMap((t) => nullableTypeLists(t.inputSchema).map((at) => `${t.name} ${at}`))).toEqual([]);
    } finally {
      await c.close();
      await endpoint.close();
      await fx.close();
    }
  });
});
