¿Dónde está el baño?
Está al final del pasillo, a la derecha.
Me encanta la comida mexicana.
Los tacos de mi abuela son los mejores del mundo.
¡Qué día tan bonito!
Vamos a la playa esta tarde.
Mi hermano estudia medicina en Madrid.
Quiere ser cirujano cuando termine la carrera.
Sus padres están muy orgullosos de él.
¿Cuánto cuesta este libro?
Cuesta quince euros.
El tren llega con veinte minutos de retraso.
Lo siento mucho por las molestias.
Buenas noches, hasta mañana.
¡Que duermas bien, cariño!
