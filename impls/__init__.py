from liveforge.impls import agent_loop as agent_loop  # registers the Agent @impl bodies
from liveforge.impls import compaction as compaction  # registers the Compactor @impl bodies
from liveforge.impls import files as files  # registers the Files @impl bodies
from liveforge.impls import memory as memory  # registers the Memory @impl bodies
from liveforge.impls import plugins as plugins  # registers the PluginHost @impl bodies
from liveforge.impls import providers as providers  # registers the provider @impl bodies
from liveforge.impls import session_changes as session_changes  # Session: changes, restore
from liveforge.impls import session_lock as session_lock  # Session: the project's turn lock
from liveforge.impls import session_store as session_store  # Session: transcript, listing
from liveforge.impls import shell as shell  # registers the Shell @impl bodies
from liveforge.impls import skills as skills  # registers the SkillLibrary @impl bodies
from liveforge.impls import subagents as subagents  # registers the SubAgents @impl bodies
from liveforge.impls import system_prompt as system_prompt  # registers SystemPrompt bodies
from liveforge.impls import toolbox as toolbox  # registers the Toolbox @impl bodies
