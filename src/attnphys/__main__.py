"""``python -m attnphys``: the command line (:func:`attnphys.cli.main`)."""

from attnphys._entry import main

if __name__ == "__main__":
    main()
