"""`python -m eval.encoders JOB...`: each job's headline as one JSON line (see the package's docstring)."""

import json
import sys

from .jobs import headline, run

for job in sys.argv[1:]:
    print(job, json.dumps(headline(run(job))), flush=True)
