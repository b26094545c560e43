/**
 * Excalidraw's renderer and fonts are optional packages (plugins/canvas/extras.ts): where the pack
 * finds them, and the message that names the install command when one is missing, for a checkout
 * (`npm run install:canvas`) and for a host app that depends on memo-kernel (`npm install ...` in its
 * project). The tarball-installed case runs for real in scripts/check-package.mjs.
 */
import * as path from 'node:path';
import { CANVAS_EXTRAS, installHint, locateExtra, missingExtra, requireExtra } from '../../../plugins/canvas/extras.js';

const peers = { '@excalidraw/utils': '0.1.5', fontkit: '^2.0.4', jsdom: '^26.1.0', '@resvg/resvg-js': '^2.6.2' };

describe('canvas extras', () => {
  it('in a checkout: npm run install:canvas, in the checkout', () => {
    expect(installHint({ dir: '/home/ada/memo', peerDependencies: peers })).toEqual({ command: 'npm run install:canvas', folder: '/home/ada/memo' });
  });

  it("in a host app's node_modules: npm install of the four packages at their tested versions, in the app's folder", () => {
    const dir = path.join('/srv', 'app', 'node_modules', 'memo-kernel');
    expect(installHint({ dir, peerDependencies: peers })).toEqual({
      command: 'npm install @excalidraw/utils@0.1.5 fontkit@2.0.4 jsdom@26.1.0 @resvg/resvg-js@2.6.2',
      folder: path.join('/srv', 'app'),
    });
  });

  it('a missing extra is a TOOL_FAILED naming what needs it, what is missing and the command', () => {
    const err = missingExtra('fontkit', 'Measuring text on a canvas', { dir: '/srv/app/node_modules/memo-kernel', peerDependencies: peers });
    expect(err.code).toBe('TOOL_FAILED');
    expect(err.message).toBe(
      "Measuring text on a canvas needs Excalidraw's renderer and fonts, which are not installed with Memo by default (fontkit is missing): run `npm install @excalidraw/utils@0.1.5 fontkit@2.0.4 jsdom@26.1.0 @resvg/resvg-js@2.6.2` in /srv/app, then try again.",
    );
    expect(err.details).toEqual({
      missing: 'fontkit',
      install: 'npm install @excalidraw/utils@0.1.5 fontkit@2.0.4 jsdom@26.1.0 @resvg/resvg-js@2.6.2',
      folder: '/srv/app',
    });
  });

  it('finds nothing for a package installed nowhere, and says how to install the extras here', () => {
    expect(locateExtra('memo-no-such-package')).toBeNull();
    expect(() => requireExtra('memo-no-such-package', 'Rendering a canvas')).toThrow(
      /^Rendering a canvas needs .*\(memo-no-such-package is missing\): run `npm run install:canvas` in .+, then try again\.$/,
    );
  });

  it('finds the four in this checkout once installed (npm run install:canvas; .ci/run does it before npm test)', () => {
    const where = CANVAS_EXTRAS.map((name) => [name, locateExtra(name) !== null]);
    expect(where).toEqual(CANVAS_EXTRAS.map((name) => [name, true]));
  });
});
