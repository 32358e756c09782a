import sys

from scala_netsim.cli import main

sys.exit(main())
