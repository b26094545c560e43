// generated from plugin.json by memo plugins types; do not edit

/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */
export interface ToolArgs {
  /** Lists the person's most recent WhatsApp chats from the local history: each with chat_id, name, whether it is a group, the unread count, and the last message (sender, text, time). Use it to find a chat before reading or replying. */
  whatsapp_latest: {
    /** How many chats (default 20), most recent first. */
    limit?: number;
    /** Only chats with unread messages. */
    unread_only?: boolean;
  };
  /** Gets one WhatsApp chat's messages from the local history, newest first, with sender names, times, and whether each was edited or deleted. The chat is a name, a phone number or a chat_id (from whatsapp_latest); an ambiguous name returns the candidates. Page back with before (next_before of the previous page). */
  whatsapp_messages: {
    /** A contact or group name, a phone number (+90 555 123 45 67), or a chat_id. */
    chat: string;
    /** How many messages (default 30), newest first. */
    limit?: number;
    /** Only messages older than this: next_before from the previous page, or a date/date-time (2026-03-08, 2026-03-08T09:00Z). */
    before?: string;
  };
  /** Searches the WhatsApp message history (full text, best matches first, each with a snippet, its chat and sender). Words are ANDed, "quoted phrases" match exactly, word* is a prefix. Filter by chat, sender and dates. */
  whatsapp_search: {
    /** The words to find. */
    query: string;
    /** Only this chat: a name, a phone number or a chat_id. */
    chat?: string;
    /** Only messages from this person: a name or a phone number; "me" for the person's own. */
    sender?: string;
    /** Only messages at or after this date/date-time (2026-03-08, 2026-03-08T09:00Z). */
    after?: string;
    /** Only messages before this date/date-time (a date means its start). */
    before?: string;
    /** Most results (default 20). */
    limit?: number;
  };
  /** Sends a WhatsApp text message from the person's linked account. The recipient is a contact or group name, a phone number, or a chat_id; an ambiguous or unknown name is refused with the candidates, and nothing is sent to a number the call did not name. The person sees the resolved recipient (name and number, and whether it is a group) and the exact text before it is sent. At most 4,096 characters; at most 10 messages a minute. */
  whatsapp_send: {
    /** A contact or group name, a phone number with country code (+90 555 123 45 67), or a chat_id from whatsapp_latest. */
    to: string;
    /** The exact message text. */
    text: string;
  };
}
