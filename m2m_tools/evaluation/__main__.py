from m2m_tools.evaluation.evaluate import main

raise SystemExit(main())
