// Live admin pages: the console's event stream says which settings changed (`settings` events:
// permissions, packs, providers), made here, by the CLI in another process, or on another instance.
import { useEffect } from 'preact/hooks';

/** Calls `reload` whenever one of `groups` changed, while the page is shown. */
export function useSettingsChanged(events, groups, reload) {
  useEffect(() => {
    if (!events) return undefined;
    const on = (e) => {
      const { changed } = JSON.parse(e.data);
      if (changed.some((g) => groups.includes(g))) reload();
    };
    events.addEventListener('settings', on);
    return () => events.removeEventListener('settings', on);
  }, [events]);
}
