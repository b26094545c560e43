// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Full-text search over the vault's notes and filed files (accents folded, word stems matched: "running" finds "run"). Words are ANDed; "quoted phrases" match in order; a word ending in * is a prefix; anything else (C++, foo-bar, quotes) is searched for literally. Each hit has id, path, title, file_type, a snippet with the matches in **bold**, and icon when the note's front matter sets one. file_types, tags and folder narrow the search inside the query, so limit counts only matching notes. An empty query lists the most recently changed notes that pass the filters. */
  vault_search_notes: {
    /** Words to find. Empty: no text condition. */
    query: string;
    /** Only these kinds: ["markdown"] for notes, ["pdf", "image"] for filed documents. Default: all. */
    file_types?: ('markdown' | 'pdf' | 'image' | 'audio' | 'video')[];
    /** Only notes with every one of these tags (with or without #; a tag also matches its nested tags: project finds project/alpha). */
    tags?: string[];
    /** Only notes in this vault folder (and below). */
    folder?: string;
    /** Most hits to return (default 20). */
    limit?: number;
  };
  /** Reads a markdown note: its content (without front matter), front matter, tags, headings, outgoing links (each resolved, ambiguous or broken) and backlinks. With a heading ("Meeting#Decisions") the section under it is returned as well. Filed files (pdf, image, audio, video) are refused with a VALIDATION error naming their type. */
  vault_read_note: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
  };
  /** Lists a vault folder: its subfolders, notes and filed files, each with its path (and id, title and file_type for files). At most 1000 entries; the result says truncated when there are more. */
  vault_list_folder: {
    /** Folder in the vault; default the vault's top folder. */
    path?: string;
  };
  /** Every tag in the vault with the number of notes that carry it, and its color, icon, sort_order, category_id and category_name (both category fields null for an uncategorized tag). */
  vault_get_tags: Record<string, never>;
  /** The note open in the host app (the editor), as vault_read_note returns it, or null when the host says none is open, or when there is no host window (plain external clients). */
  vault_get_current_note: Record<string, never>;
  /** Creates a markdown note. The file is <folder>/<title>.md; missing folders are created. Optional front matter and tags (added to the front matter). Refused if a note with that path exists. Shows the new note as a diff before it is written. */
  vault_create_note: {
    /** The note's title, which is also its file name (without .md). Not allowed: / \ : * ? " < > | [ ] and a leading dot. */
    title: string;
    /** Folder in the vault; default the top folder. */
    folder?: string;
    /** The note's markdown body. */
    content?: string;
    /** Front matter keys and values (YAML). */
    front_matter?: Record<string, unknown>;
    /** Tags to put in the front matter. */
    tags?: string[];
  };
  /** Changes an existing note: content replaces the whole body, append adds text at the end, front_matter sets keys (null removes one). The person is shown the change as a diff and asked every time. The write is refused if the note changed after that diff was shown. Filed files are refused. */
  vault_update_note: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
    /** The complete new body (the front matter is kept unless front_matter is given). */
    content?: string;
    /** Text added at the end of the body (on a new line). */
    append?: string;
    /** Keys to set in the front matter; a null value removes that key. */
    front_matter?: Record<string, unknown>;
  };
  /** Renames a note (or filed file) in its folder. Every wiki link in the vault that pointed at it is rewritten to the new name (heading, alias and embed kept); the preview lists them. The note keeps its id. */
  vault_rename_note: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
    /** The new name, without .md. */
    new_title: string;
  };
  /** Deletes a note or filed file. The preview says what is lost: its size, and the links in other notes that will break. */
  vault_delete_note: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
  };
  /** Creates a folder in the vault (and any missing parents). */
  vault_create_folder: {
    /** Folder path in the vault. */
    path: string;
  };
  /** Renames a vault folder in place. Notes keep their ids; links that name a path inside it are rewritten. */
  vault_rename_folder: {
    /** Folder path in the vault. */
    path: string;
    /** The folder's new name (one segment, no /). */
    new_name: string;
  };
  /** Deletes a vault folder. A folder that is not empty needs recursive: true; the preview lists the notes and files lost and the links elsewhere that will break. */
  vault_delete_folder: {
    /** Folder path in the vault. */
    path: string;
    /** Required to delete a folder that is not empty. Default false. */
    recursive?: boolean;
  };
  /** Moves a note or filed file to another vault folder (created if missing), keeping its name and id. Links that named its old path are rewritten. */
  vault_move_to_folder: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
    /** Destination folder in the vault; empty for the top folder. */
    folder: string;
  };
  /** Adds a tag to a note's front matter (tags list). Letters, digits, _ - and / (nesting). */
  vault_add_tag: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
    /** The tag, with or without #. */
    tag: string;
  };
  /** Removes a tag from a note: from its front matter and every #tag in its text (a change to the note's body, so it is asked every time). */
  vault_remove_tag: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
    /** The tag, with or without #. */
    tag: string;
  };
  /** Saves HTML (a diagram, chart or small interactive explanation, at most 512 KB) as an attachment beside a note and embeds it at the end of the note (![[file.html]]). Asked every time. */
  vault_add_html_artifact: {
    /** The note: its id, its path in the vault (e.g. "Projects/Meeting.md"), or a wiki-link target ("Meeting", "Meeting#Decisions"). A name several notes share is refused with the candidates. */
    note: string;
    /** The HTML document. */
    html: string;
    /** Short name for the attachment's file (default: artifact). */
    title?: string;
  };
  /** Rebuilds the vault's index from its files (notes keep their ids, tags their settings). With create: true, makes the vault folder first when it does not exist (memo vault init). Returns the counts. */
  vault_reindex: {
    /** Create the vault folder if it is missing. Default false. */
    create?: boolean;
  };
  /** The state of the vault's index and planning database: the vault folder and its note count, whether this run found the index damaged and set it aside (when, why, and where the damaged file now is), damaged index files kept beside it, how many note ids are kept outside the index, and the planning database's check and dated backups. For a person asking whether the vault is healthy. */
  vault_index_health: Record<string, never>;
  /** The task statuses (the board's columns), in order, each with id, name, color, is_done and the number of tasks in it. */
  vault_list_statuses: Record<string, never>;
  /** Creates a task status at the end of the list (or at position). Returns its id. */
  vault_create_status: {
    /** The status's name (unique, any case). */
    name: string;
    /** A colour (#rrggbb or a name); null clears it. */
    color?: string | null;
    /** Marks the column finished tasks go to. Default false. */
    is_done?: boolean;
    /** 0-based place in the list; default last. */
    position?: number;
  };
  /** Changes a status's name, color or is_done. The preview shows only the fields that change. */
  vault_update_status: {
    /** The status: its id, or its name (any case). */
    status: string;
    /** New name. */
    name?: string;
    /** A colour (#rrggbb or a name); null clears it. */
    color?: string | null;
    /** Marks the column finished tasks go to. */
    is_done?: boolean;
  };
  /** Deletes a status. Its tasks stay: they move to move_tasks_to, or are left with no status; the preview says which, and lists them. */
  vault_delete_status: {
    /** The status: its id, or its name (any case). */
    status: string;
    /** A status to move its tasks to (id or name). Default: the tasks are left with no status. */
    move_tasks_to?: string;
  };
  /** Puts statuses in a new order (kept gapless, and consistent when reorders run at the same time). */
  vault_reorder_statuses: {
    /** Ids (or names) in the wanted order. They come first, in this order; the others keep their order after them. */
    ids: string[];
  };
  /** Projects in order, each with id, name, description, color, icon, home_note_id, archived, task_count, open_task_count and linked_counts (notes, files, events). Archived projects only with include_archived. */
  vault_list_projects: {
    /** List archived projects too. Default false. */
    include_archived?: boolean;
  };
  /** One project as vault_list_projects gives it, with its task counts by status. */
  vault_get_project: {
    /** The project: its id, or its name (any case). A name several projects share is refused with the candidates. */
    project: string;
  };
  /** Creates a project at the end of the list. Returns its id. */
  vault_create_project: {
    /** The project's name. */
    name: string;
    /** The project's description; null clears it. */
    description?: string | null;
    /** A colour (#rrggbb or a name); null clears it. */
    color?: string | null;
    /** An icon name or emoji; null clears it. */
    icon?: string | null;
  };
  /** Changes a project's name, description, color or icon. The preview shows only the fields that change. */
  vault_update_project: {
    /** The project: its id, or its name (any case). A name several projects share is refused with the candidates. */
    project: string;
    /** New name. */
    name?: string;
    /** The project's description; null clears it. */
    description?: string | null;
    /** A colour (#rrggbb or a name); null clears it. */
    color?: string | null;
    /** An icon name or emoji; null clears it. */
    icon?: string | null;
  };
  /** Deletes a project with its tasks (and their subtasks) and its links to notes, files and events (the notes and files themselves stay). The preview lists what is lost. */
  vault_delete_project: {
    /** The project: its id, or its name (any case). A name several projects share is refused with the candidates. */
    project: string;
  };
  /** Archives a project (hidden from vault_list_projects unless include_archived; its tasks are kept), or with archived: false brings it back. */
  vault_archive_project: {
    /** The project: its id, or its name (any case). A name several projects share is refused with the candidates. */
    project: string;
    /** false unarchives. Default true. */
    archived?: boolean;
  };
  /** Puts projects in a new order (kept gapless, and consistent when reorders run at the same time). */
  vault_reorder_projects: {
    /** Ids (or names) in the wanted order. They come first, in this order; the others keep their order after them. */
    ids: string[];
  };
  /** Tasks in board order (projects in their order, tasks without a project first, each task followed by its subtasks), each with id, title, description, project, status, parent_id, priority, due date/time/zone, repeat_rule, tags, completed and archived. Open, unarchived tasks unless include_completed / include_archived. */
  vault_list_tasks: {
    /** A project: its id or its name (any case). */
    project?: string;
    /** A status: its id or its name (any case). */
    status?: string;
    /** Only tasks due on or after this day (YYYY-MM-DD). */
    due_from?: string;
    /** Only tasks due on or before this day (YYYY-MM-DD). */
    due_to?: string;
    /** Only tasks with this tag (or a tag nested under it). */
    tag?: string;
    /** Completed tasks too. Default false. */
    include_completed?: boolean;
    /** Archived tasks too. Default false. */
    include_archived?: boolean;
    /** Most tasks to return (default 200); the result says truncated when there are more. */
    limit?: number;
  };
  /** One task as vault_list_tasks gives it, with its subtasks. */
  vault_get_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
  };
  /** Creates a task (or, with parent, a subtask in its parent's project) at the end of its list or at position. Returns its id. */
  vault_create_task: {
    /** Notes the task links to (id, path or title), each by its stable id, so a rename or move keeps the link. */
    notes?: string[];
    /** The task's title. */
    title: string;
    /** A project: its id or its name (any case). */
    project?: string;
    /** Make it a subtask of this task (id or unique title). */
    parent?: string;
    /** The task's status (id or name); null: none. */
    status?: string | null;
    /** The task's description; null clears it. */
    description?: string | null;
    /** 0 none, 1 low, 2 medium, 3 high, 4 urgent. */
    priority?: number;
    /** Due day, YYYY-MM-DD; null clears the due date (and time). */
    due_date?: string | null;
    /** Due time of day, HH:MM (24 h); null makes the due date all-day. Needs a due date. */
    due_time?: string | null;
    /** IANA time zone of the due date and time (Europe/Paris); null: floating (the zone of whoever reads it). */
    time_zone?: string | null;
    /** An RFC 5545 repeat rule (FREQ=WEEKLY;BYDAY=MO), kept with the task; null clears it. */
    repeat_rule?: string | null;
    /** When to remind (ISO 8601 with Z or an offset, in the future; a time in words is asked back): memo serve shows it in the console (and sends it to the person's own WhatsApp when they opted in) once, unless the task is done first. A repeating task's next occurrence gets one as far before its due date. null clears it. */
    remind_at?: string | null;
    /** The task's tags (with or without #): the whole list. */
    tags?: string[];
    /** 0-based place in its list; default last. */
    position?: number;
  };
  /** Changes a task's fields (null clears one). The preview shows only the fields that change. To change its project or place, use vault_move_task. */
  vault_update_task: {
    /** The notes the task links to (id, path or title): the whole list; [] or null removes every link. */
    notes?: string[] | null;
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
    /** New title. */
    title?: string;
    /** The task's status (id or name); null: none. */
    status?: string | null;
    /** The task's description; null clears it. */
    description?: string | null;
    /** 0 none, 1 low, 2 medium, 3 high, 4 urgent. */
    priority?: number;
    /** Due day, YYYY-MM-DD; null clears the due date (and time). */
    due_date?: string | null;
    /** Due time of day, HH:MM (24 h); null makes the due date all-day. Needs a due date. */
    due_time?: string | null;
    /** IANA time zone of the due date and time (Europe/Paris); null: floating (the zone of whoever reads it). */
    time_zone?: string | null;
    /** An RFC 5545 repeat rule (FREQ=WEEKLY;BYDAY=MO), kept with the task; null clears it. */
    repeat_rule?: string | null;
    /** When to remind (ISO 8601 with Z or an offset, in the future; a time in words is asked back): memo serve shows it in the console (and sends it to the person's own WhatsApp when they opted in) once, unless the task is done first. A repeating task's next occurrence gets one as far before its due date. null clears it. */
    remind_at?: string | null;
    /** The task's tags (with or without #): the whole list. */
    tags?: string[];
  };
  /** Deletes a task with its subtasks. The preview lists the subtasks lost. */
  vault_delete_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
  };
  /** Marks a task completed and moves it into the first status marked done, if there is one (its subtasks are left as they are; the preview says how many stay open). */
  vault_complete_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
  };
  /** Marks a completed task open again; one in a status marked done moves to the first open status. */
  vault_uncomplete_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
  };
  /** Archives a task (hidden from vault_list_tasks unless include_archived; nothing is lost). */
  vault_archive_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
  };
  /** Brings an archived task back. */
  vault_unarchive_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
  };
  /** Moves a task to another project (null: no project; its subtasks follow), another status (null: none) and/or another place in its list. A subtask stays in its parent's project. */
  vault_move_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
    /** The project to move it to (id or name); null: no project. */
    project?: string | null;
    /** The task's status (id or name); null: none. */
    status?: string | null;
    /** 0-based place in its list; default last. */
    position?: number;
  };
  /** Puts the tasks of one list in a new order (kept gapless, and consistent when reorders run at the same time). */
  vault_reorder_tasks: {
    /** Task ids (or unique titles) of one list: the top-level tasks of one project (or of no project), or one task's subtasks. They come first, in this order; the others keep their order after them. */
    ids: string[];
  };
  /** Copies a task (open and unarchived, right after the original) with copies of its subtasks. Returns the copy's id and its subtasks' ids. */
  vault_duplicate_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
    /** The copy's title; default the original's. */
    title?: string;
  };
  /** Makes a task (one without subtasks) a subtask of another top-level task, at the end of its subtasks; it moves to that task's project. */
  vault_convert_task_to_subtask: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
    /** The task it becomes a subtask of (id or unique title). */
    parent: string;
  };
  /** Makes a subtask a task of its own in the same project, right after its former parent (or at position). */
  vault_convert_subtask_to_task: {
    /** The task: its id, or its exact title (any case) when no other task has it. */
    task: string;
    /** 0-based place among the project's tasks; default right after the former parent. */
    position?: number;
  };
  /** Reads the journal entry of one day (the markdown file <journal folder>/YYYY-MM-DD.md): id, path, content (without front matter), front matter and tags. A day without an entry is NOT_FOUND. */
  vault_get_journal_entry: {
    /** The day, YYYY-MM-DD (2026-11-30). */
    date: string;
  };
  /** Journal entries, newest day first: date, id, path, size and when each was last modified. Files in the journal folder whose names are not a day (YYYY-MM-DD.md) are not entries. */
  vault_list_journal_entries: {
    /** Only days on or after this one (YYYY-MM-DD). */
    from?: string;
    /** Only days on or before this one (YYYY-MM-DD). */
    to?: string;
    /** Most entries to return (default 100); the result says truncated when there are more. */
    limit?: number;
  };
  /** Writes the journal entry of a day that has none: a markdown file <journal folder>/YYYY-MM-DD.md (the folder is created if missing), indexed like any note. Shown as a diff before it is written; refused if that day already has an entry (use vault_update_journal_entry). */
  vault_create_journal_entry: {
    /** The day, YYYY-MM-DD (2026-11-30). */
    date: string;
    /** The entry's markdown body. */
    content?: string;
    /** Tags to put in the entry's front matter. */
    tags?: string[];
  };
  /** Changes a day's journal entry: content replaces the whole body, append adds text at the end (front matter is kept). The person is shown the change as a diff and asked every time. Refused if the entry changed after that diff was shown. */
  vault_update_journal_entry: {
    /** The day, YYYY-MM-DD (2026-11-30). */
    date: string;
    /** The complete new body. */
    content?: string;
    /** Text added at the end of the body (on a new line). */
    append?: string;
  };
  /** Deletes a day's journal entry (its file). The preview says what is lost: the entry's size and lines, its id, and the links in other notes that will break. */
  vault_delete_journal_entry: {
    /** The day, YYYY-MM-DD (2026-11-30). */
    date: string;
  };
  /** Inbox items, newest first: id, title, content, url, tags, snoozed_until, archived, created_at. Items that are archived or snoozed (until a time still to come) are left out unless include_archived / include_snoozed. */
  vault_list_inbox_items: {
    /** Archived items too. Default false. */
    include_archived?: boolean;
    /** Items snoozed until a time still to come too. Default false. */
    include_snoozed?: boolean;
    /** Only items with this tag (or a tag nested under it). */
    tag?: string;
    /** Most items to return (default 200); the result says truncated when there are more. */
    limit?: number;
  };
  /** One inbox item by id, with its content, url, tags, snooze and archive state. */
  vault_get_inbox_item: {
    /** The inbox item: its id, or its exact title. */
    item: string;
  };
  /** Adds an item to the inbox: a title, optional text, link and tags. The new text is shown as a diff before it is saved. Returns the item's id. */
  vault_add_to_inbox: {
    /** What the item is about. */
    title: string;
    /** The item's text (markdown). */
    content?: string;
    /** A link the item is about (http or https). */
    url?: string;
    /** Tags for the item. */
    tags?: string[];
  };
  /** Changes an inbox item's title, content or url (null clears content or url). The preview lists each field that changes, before and after. */
  vault_update_inbox_item: {
    /** The inbox item: its id, or its exact title. */
    item: string;
    /** The new title. */
    title?: string;
    /** The new text; null clears it. */
    content?: string | null;
    /** The new link (http or https); null clears it. */
    url?: string | null;
  };
  /** Hides an inbox item from the list until a time (ISO 8601 with a zone: 2026-12-01T09:00:00+01:00); null wakes it now. */
  vault_snooze_inbox_item: {
    /** The inbox item: its id, or its exact title. */
    item: string;
    /** When the item comes back, ISO 8601 with Z or an offset; null ends the snooze. */
    until: string | null;
  };
  /** Archives an inbox item (hidden from the list unless include_archived). */
  vault_archive_inbox_item: {
    /** The inbox item: its id, or its exact title. */
    item: string;
  };
  /** Brings an archived inbox item back into the inbox. */
  vault_unarchive_inbox_item: {
    /** The inbox item: its id, or its exact title. */
    item: string;
  };
  /** Deletes an inbox item. The preview says what is lost: its title, text, link and tags. */
  vault_delete_inbox_item: {
    /** The inbox item: its id, or its exact title. */
    item: string;
  };
  /** Adds a tag to an inbox item. */
  vault_add_inbox_tag: {
    /** The inbox item: its id, or its exact title. */
    item: string;
    /** The tag (without #). */
    tag: string;
  };
  /** Removes a tag from an inbox item; an item without that tag is refused before anyone is asked. */
  vault_remove_inbox_tag: {
    /** The inbox item: its id, or its exact title. */
    item: string;
    /** The tag (without #). */
    tag: string;
  };
  /** Reads through the desktop bridge: an allowlisted operation name and its args array. Operations: notes.resolveWikiTarget [target] (follows a [[link]] as the editor does: Meeting#Decisions is the note Meeting at heading Decisions), notes.resolveByTitle [title], templates.get [name?] (none: the list), tasks.listProjectContents [projectId], tasks.listProjectLinks [projectId], tasks.listForItem [itemType, itemId], tags.listCategories [], settings.getFeaturesSettings [], settings.getInboxSettings [], settings.getReminderSettings [], calendar.listEvents [{startAt?, endAt?}], calendar.getRange [start, end] or [{startAt, endAt}], savedFilters.list [], savedFilters.run [{id, limit?}] (the notes a saved search finds now), bookmarks.list [], folderViews.get [{folder}], folderViews.list [], reminders.list [{includeDelivered?}], reminders.history [{limit?}] (what was delivered, when, where), properties.list [{folder?}] (front matter keys in use), properties.get [{noteId}], search.reasons [{query, folder?, tags?, limit?, noteId?}] (why each note matched, or which terms a note lacks). Answers {"success": true, ...} or the operation's own failure as {"success": false, "error": "..."} (a wrong args array with the operation's usage): check success before reading the payload. Any other name is refused with an error (writes go through vault_desktop_write; account, auth, provider, updater, telemetry and whole-scene canvas operations are deliberately not available). */
  vault_desktop_read: {
    /** The operation's name, such as tasks.listProjectContents. */
    operation: string;
    /** The operation's arguments, in order (often one object). */
    args?: unknown[];
  };
  /** Changes the vault through the desktop bridge: an allowlisted operation name and its args array, behind the same approval as the named write tools (a delete is asked every time). Operations: notes.applyTemplate [{noteId, template}], notes.importFiles [{sourcePaths, folder?}], inbox.captureLink [{url}], inbox.convertToNote [{itemId, folder?}], inbox.convertToTask [{itemId, projectId?}], inbox.convertToEvent [{itemId, startAt, endAt?, calendar?}], inbox.convertToReminder [{itemId, remindAt}], tasks.linkProjectItem / unlinkProjectItem [{projectId, itemType, itemId}], tasks.setProjectLinkPinned [{projectId, itemId, pinned}], tasks.setProjectHomeNote [{projectId, noteId}], tasks.captureUrlToProject [{projectId, url}], tasks.importFilesToProject [{projectId, sourcePaths}], tags.createCategory [{name}], tags.renameCategory [{id, name}], tags.deleteCategory [{id}], tags.reorder [{assignments?, categoryOrder?}], settings.setFeaturesSettings [{inbox?, tasks?, ...}], settings.setInboxSettings [{reviewReminder?, reviewTime?}], settings.setReminderSettings [{whatsapp}], calendar.createEvent [{title, startAt, endAt?, allDay?, location?, description?, calendar?}], calendar.updateEvent [{id, ...fields}], calendar.deleteEvent [{id}], savedFilters.create [{name, query?, folder?, tags?, fileTypes?}], savedFilters.update [{id, ...}], savedFilters.delete [{id}], savedFilters.reorder [{ids}], bookmarks.add [{itemType, itemId, title?}], bookmarks.remove [{id}], bookmarks.reorder [{ids}], folderViews.set [{folder, view?, sortBy?, sortDirection?, showSubfolders?}], folderViews.reset [{folder}], reminders.create [{title, remindAt, note?, itemType?, itemId?}], reminders.update [{id, title?, remindAt?, note?}], reminders.delete [{id}], properties.set [{noteId, name, value}], properties.remove [{noteId, name}]. Times are ISO 8601 with Z or an offset. Answers {"success": true, ...} or {"success": false, "error": "..."} (a wrong args array with the usage); any other name is refused with an error. */
  vault_desktop_write: {
    /** The operation's name, such as tasks.linkProjectItem. */
    operation: string;
    /** The operation's arguments, in order (often one object). */
    args?: unknown[];
  };
}
