"""`planledger tui`: a Textual viewer of one session's plan, its revisions and its history."""
