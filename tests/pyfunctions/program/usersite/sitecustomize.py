"""A user's own sitecustomize: Lantern's bootstrap must still let it run."""
import os

os.environ["USER_SITECUSTOMIZE_RAN"] = "1"
