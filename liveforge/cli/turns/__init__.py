"""An agent's turn in the terminal, for `chat`, `run` and `demo`: building the agent and
driving a turn (`_agent`), rendering its events (`_render`) with the streamed text
(`_stream_view`), the waiting line (`_waiting`), token use and cost (`_cost`), and the lines
that say where a change stands (`_lifecycle`)."""
