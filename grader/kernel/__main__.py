from grader.kernel.boot import main

main()
