from liveforge.impls import providers as providers  # registers the provider @impl bodies
from liveforge.impls import toolbox as toolbox  # registers the Toolbox @impl bodies
