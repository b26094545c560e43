// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Lists every canvas (.excalidraw file) in the vault, with how many items (note, task and event cards) sit on each, its element count and its version. */
  vault_list_canvases: Record<string, never>;
  /** What is on one canvas: the notes, tasks and events on it as cards (type, id, title as the note/task/event has it now; missing: true when it no longer exists) and the text written on it (free text and shape labels), without geometry. Long canvases cap the text returned and say so with texts_truncated. Use vault_read_canvas_elements before drawing or editing. */
  vault_read_canvas: {
    /** The canvas: its name (Roadmap) or its path inside the vault (Plans/Roadmap.excalidraw). */
    canvas: string;
    /** Most characters of text to return (default 4000). */
    maxTextChars?: number;
  };
  /** The shapes on one canvas: id, type, position, size, text (a label is shown on its shape, with labelId), colours, arrow bindings (start, end; arrows bound to a shape), frame membership, card references. The read to use before drawing: an id from here is what an arrow binds to ({"elementId"}) and what an edit changes. Returns version, to pass to the write that follows. */
  vault_read_canvas_elements: {
    /** The canvas: its name (Roadmap) or its path inside the vault (Plans/Roadmap.excalidraw). */
    canvas: string;
    /** Only these elements. */
    ids?: string[];
    /** Most elements to return (default 500), in drawing order. */
    limit?: number;
  };
  /** Creates an empty canvas: an .excalidraw file in the vault (Excalidraw opens it). name may include folders inside the vault (Plans/Roadmap). Refused if it exists. */
  vault_create_canvas: {
    /** The canvas name, optionally with folders inside the vault (Plans/Roadmap); .excalidraw is added. */
    name: string;
  };
  /** Puts existing notes, tasks or calendar events on a canvas as cards (a rounded rectangle carrying the entity reference, its text the title). Checks each one exists first. The only way to put a card on a canvas. Returns each card's elementId. */
  vault_add_canvas_item: {
    /** The canvas: its name (Roadmap) or its path inside the vault (Plans/Roadmap.excalidraw). */
    canvas: string;
    /** The version a read of this canvas returned. When given and the canvas changed since, nothing is written (CONFLICT): read it again. */
    version?: string;
    /** The notes, tasks or events: {type, id, x?, y?, backgroundColor?, strokeColor?}. */
    items: unknown[];
  };
  /** Takes a card off a canvas (the note, task or event itself is untouched); arrows bound to it are unbound. Give the entity (type + id) or the card's elementId. */
  vault_remove_canvas_item: {
    /** The canvas: its name (Roadmap) or its path inside the vault (Plans/Roadmap.excalidraw). */
    canvas: string;
    /** The version a read of this canvas returned. When given and the canvas changed since, nothing is written (CONFLICT): read it again. */
    version?: string;
    /** What the card stands for. */
    type?: 'note' | 'task' | 'event';
    /** The note (id, path or title), task (id or exact title) or event (calendar:uid) id. */
    id?: string;
    /** The card's element id. */
    elementId?: string;
  };
  /** Draws on a canvas with Excalidraw element skeletons (camelCase): rectangle, ellipse, diamond, text, arrow, line, freedraw, frame, image (a fileId already attached), embed; full style vocabulary. Give an element a ref and others in the same call can point at it; an arrow's start/end ({"ref"} or {"elementId"} of a shape already there) is bound on both sides and follows the shapes when they move; a frame's children can be new or existing. Arrows with start and end need no coordinates. The response maps every ref to its new id. Cards for notes/tasks/events go through vault_add_canvas_item instead. */
  vault_draw_on_canvas: {
    /** The canvas: its name (Roadmap) or its path inside the vault (Plans/Roadmap.excalidraw). */
    canvas: string;
    /** The version a read of this canvas returned. When given and the canvas changed since, nothing is written (CONFLICT): read it again. */
    version?: string;
    /** Excalidraw element skeletons: {type, ref?, x, y, width, height, style..., text?, label?, points?, start?, end?, children?, name?, fileId?, link?}. */
    elements: unknown[];
  };
  /** Changes elements already on a canvas: move (x/y or dx/dy: bound arrows follow, a frame carries its children), resize, restyle, retext (a text or a shape's label), or delete. A card can be moved and restyled but its text is its note's title and is not rewritten. Deleting anything is asked every time. */
  vault_edit_canvas_elements: {
    /** The canvas: its name (Roadmap) or its path inside the vault (Plans/Roadmap.excalidraw). */
    canvas: string;
    /** The version a read of this canvas returned. When given and the canvas changed since, nothing is written (CONFLICT): read it again. */
    version?: string;
    /** One entry per element: {elementId, x?, y?, dx?, dy?, width?, height?, angle?, text?, style..., delete?}. */
    changes: unknown[];
  };
  /** Renders a canvas to an image with Excalidraw's own SVG export (PNG rasterised from it with the fonts Excalidraw ships): format svg returns the SVG text, png returns base64. For people, memo canvas render <name> --svg|--png writes the file. */
  vault_render_canvas: {
    /** The canvas: its name (Roadmap) or its path inside the vault (Plans/Roadmap.excalidraw). */
    canvas: string;
    /** svg (default) or png. */
    format?: 'svg' | 'png';
    /** PNG scale (default 1). */
    scale?: number;
    /** Margin around the drawing (default 10). */
    padding?: number;
    /** Paint the canvas background (default true). */
    background?: boolean;
  };
}
