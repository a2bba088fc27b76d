"""Statistics, verdicts, the result store and the renderers (JUnit, RFC 8456 report).

Nothing here knows about the emulator or the controller: it reads and writes
``results.json`` and renders from it.
"""
