"""Events that reach people and programs: email delivery of the notification outbox (mail, mail_delivery,\ndigest), outbound webhooks and MCP resource subscriptions (docs/events.md)."""
