"""Shared test configuration: a reproducible hypothesis profile.

Profiles: "ci" (default; derandomized, no deadline, modest example counts) and "dev" (random,
more examples).  Pick one with HYPOTHESIS_PROFILE=dev.
"""

import os
import sys

from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # `import oracle`, `import seed000`, `import helpers`
# an installed fasttie wins; otherwise the source tree next to tests/
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
