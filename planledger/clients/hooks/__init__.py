"""Agent hooks: `planledger hook claude-code|gemini|codex` and `planledger hooks install`.

Each agent module turns one hook event into ledger calls and answers in that agent's protocol;
`runner` reads the event and fails open; `install` merges the hook entries into settings files.
Nothing here imports the service until an event needs it.
"""
