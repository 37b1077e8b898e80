from miniclaw.cli import main

main()
