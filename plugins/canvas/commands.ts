/**
 * `memo canvas render <name> --svg|--png [--out FILE]`: the canvas drawn by Excalidraw's own export,
 * through the vault_render_canvas tool (the kernel's one pipeline), written where the person says.
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { PackApi } from 'memo-kernel/pack';

type PackCommand = Parameters<PackApi['commands']['register']>[0];

export const canvasCommand: PackCommand = {
  name: 'canvas',
  description: "canvases in the vault: render one to SVG or PNG with Excalidraw's own export",
  subcommands: [
    {
      name: 'render',
      description: 'render a canvas to an image: memo canvas render <name> --svg|--png [--out FILE] [--scale N]',
      arguments: [{ name: 'name', required: true, description: 'the canvas name or its path in the vault' }],
      options: [
        { flags: '--svg', description: 'write SVG (the default)' },
        { flags: '--png', description: 'write PNG' },
        { flags: '--out <file>', description: 'where to write it (default: the canvas name with .svg or .png, in the working directory)' },
        { flags: '--scale <n>', description: 'PNG scale (default 1)' },
        { flags: '--json', description: 'print JSON' },
      ],
      run: async (ctx) => {
        const json = Boolean(ctx.options.json);
        if (ctx.options.svg && ctx.options.png) {
          ctx.print(
            json ? { ok: false, error: { code: 'VALIDATION', message: 'Give --svg or --png, not both.' } } : 'VALIDATION: Give --svg or --png, not both.',
          );
          return 2;
        }
        const format = ctx.options.png ? 'png' : 'svg';
        const name = String(ctx.args.name);
        const scale = ctx.options.scale === undefined ? undefined : Number(ctx.options.scale);
        const r = await ctx.invoke('vault_render_canvas', { canvas: name, format, ...(scale !== undefined ? { scale } : {}) });
        if (!r.ok) {
          ctx.print(json ? { ok: false, error: { code: r.error.code, message: r.error.message } } : `${r.error.code}: ${r.error.message}`);
          return 1;
        }
        const v = r.value as { canvas: string; width: number; height: number; data: string };
        const out = typeof ctx.options.out === 'string' ? ctx.options.out : path.basename(v.canvas).replace(/\.excalidraw$/i, '') + '.' + format;
        writeFileSync(out, format === 'png' ? Buffer.from(v.data, 'base64') : v.data);
        const result = { canvas: v.canvas, file: path.resolve(out), format, width: v.width, height: v.height };
        ctx.print(json ? { ok: true, result } : `${v.canvas} -> ${out} (${format}, ${v.width}x${v.height})`);
        return 0;
      },
    },
  ],
};
