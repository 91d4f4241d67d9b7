import sys

from contextlab.cli import main

sys.exit(main())
