"""The server's shared work, apart from the pages: no streamlit import, so the tests and the benchmarks drive it directly.

- ``serving.scheduler``: ``DecodeScheduler``, the one interface of the language model's decode scheduler, the
  factory that picks its kind, and the keep-alive loops a waiting session runs (pages only submit and read);
- ``serving.decoding``: the scheduler in a thread of the server (continuous batching over one batch cache);
- ``serving.decode_process``: the same scheduler in a process of its own (``python -m serving.decode_process``);
- ``serving.training``: the one-at-a-time seq2seq training queue;
- ``serving.fair``: each session's fair share of the server's CPU, and turns for a page's large part;
- ``serving.log``: the server's own log lines (what the benchmarks count).

The app (``ui.compute``) holds one of each per server process.
"""
